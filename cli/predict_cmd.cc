// artune predict: the predicted time of one pass of a workload (a capture's replay
// list, or a scheme's message: what `artune sweep` measures) under every config of
// a search space, costed by a stored link model (`artune model measure`); the best,
// its margin over the default and the terms that decided. Stored, so that
// `artune apply config --prediction ID` writes it. Thin over artune/model/predict.h.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "artune/db/fallback_store.h"
#include "artune/model/link_model.h"
#include "artune/model/model_json.h"
#include "artune/model/predict.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/sweep_plan.h"
#include "command.h"
#include "format.h"
#include "knob_flags.h"

namespace artune::cli {
namespace {

struct PredictFlags {
  KnobFlags knobs;
  tuner::SweepPlan plan;  // the workload and the axes, as `artune sweep` reads them
  int64_t model_id = 0;   // 0: the newest stored model
  uint32_t top = 10;
  bool json = false;
};

std::string Millis(double seconds) {
  std::ostringstream out;
  out << std::setprecision(4) << seconds * 1e3 << " ms";
  return out.str();
}

std::string PercentText(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << fraction * 100 << " %";
  return out.str();
}

void PrintHuman(const db::PredictionRecord& record, const model::Prediction& prediction,
                const db::LinkModelRecord& model, const Status& not_stored, double compute_s,
                uint32_t top) {
  std::cout << "Prediction " << (not_stored.ok() ? std::to_string(record.id) : "(not stored)")
            << ": " << record.workload << " costed by link model " << model.id << " ("
            << model.fabric << " to " << model.peer << ", " << model.created_at << "), "
            << record.configs << " configs, " << FormatNumber(record.inflight, 0)
            << " calls in flight, in " << FormatNumber(compute_s * 1e3, 1) << " ms\n";
  std::cout << std::left << std::setw(10) << "best" << record.best_knobs << "  "
            << Millis(record.best_s) << " per pass\n";
  std::cout << std::left << std::setw(10) << "default" << record.default_knobs << "  "
            << Millis(record.default_s) << " per pass\n";
  if (prediction.margin > 0) {
    std::cout << std::left << std::setw(10) << "margin"
              << "the best saves " << PercentText(prediction.margin) << " of the default's pass\n";
  } else {
    std::cout << std::left << std::setw(10) << "margin"
              << "none: the default is predicted as fast as any config of the space\n";
  }
  bool first = true;
  for (const model::DecidingTerm& term : prediction.deciding) {
    std::cout << std::left << std::setw(10) << (first ? "deciding" : "") << term.text << "\n";
    first = false;
  }
  std::vector<std::vector<std::string>> rows = {{"RANK", "KNOBS", "PREDICTED", "VS DEFAULT"}};
  for (size_t i = 0; i < prediction.ranked.size() && i < top; ++i) {
    const model::ConfigPrediction& config = prediction.ranked[i];
    const double ratio = record.default_s > 0 ? config.cost.seconds / record.default_s : 0;
    rows.push_back({std::to_string(i + 1), db::TrialKnobKey(config.knobs),
                    Millis(config.cost.seconds), FormatNumber(ratio, 3) + "x"});
  }
  std::cout << "\n";
  PrintTable(rows, {true, false, true, true}, std::cout);
  if (not_stored.ok()) {
    std::cout << "`artune apply config --prediction " << record.id << "` writes the best\n";
  }
}

Status RunPredict(const PredictFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::SearchSpace space, tuner::ParseSearchSpace(flags.plan.axes));
  ARTUNE_ASSIGN_OR_RETURN(
      std::unique_ptr<db::FallbackStore> store,
      db::FallbackStore::Open(db::ResolveDatabasePath(context.globals.db_path), std::cerr));
  ARTUNE_ASSIGN_OR_RETURN(const db::LinkModelRecord model_record,
                          model::ChooseStoredModel(*store, flags.model_id));
  ARTUNE_ASSIGN_OR_RETURN(const model::LinkModel link_model, model::FromRecord(model_record));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::Workload workload, tuner::WorkloadOf(flags.plan, *store));
  const double inflight = model::PassInflight(flags.plan, workload);
  const auto start = std::chrono::steady_clock::now();
  ARTUNE_ASSIGN_OR_RETURN(const model::Prediction prediction,
                          model::Predict(link_model, workload, space, loaded.config, inflight));
  const double compute_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  db::PredictionRecord record =
      model::PredictionRecordOf(prediction, model_record, workload, space);
  auto id = store->InsertPrediction(record);
  if (id.ok()) record.id = *id;
  const Status not_stored =
      id.ok() ? store->NotStoredStatus("the prediction above was not stored") : id.status();
  if (flags.json) {
    std::cout << model::PredictionJson(record, prediction, not_stored.ok(), compute_s).dump(2)
              << "\n";
  } else {
    PrintHuman(record, prediction, model_record, not_stored, compute_s, flags.top);
  }
  return not_stored;
}

}  // namespace

void RegisterPredict(CLI::App& root, Context& context) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* command = root.add_subcommand(
      "predict",
      "Predict the best config of a search space for a workload from a link model (`artune "
      "model measure`) in milliseconds, without measuring: every config's time of one pass, "
      "the margin over the default and the terms that decided; stored for `artune apply "
      "config --prediction ID`");
  AddKnobFlags(*command, flags->knobs);
  command->add_option("--knob", flags->plan.axes,
                      "A knob axis, as `artune sweep --knob`: NAME=LO..HI:xF or NAME=a,b,c; "
                      "repeatable. Default: eager_threshold=256B..256KiB:x2 and "
                      "chunk_size=16KiB..4MiB:x2");
  command->add_option("--workload", flags->plan.capture_id,
                      "Stored capture ID whose replay list to cost (`artune captures`), as `artune "
                      "sweep --workload` replays it");
  command->add_option("--scheme", flags->plan.scheme, "TF-gRPC-Bench payload scheme instead")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->excludes("--workload")
      ->capture_default_str();
  command->add_option("--classes", flags->plan.classes,
                      "Buffer classes of the scheme, e.g. S,M,L (default S,M for uniform, S,M,L "
                      "otherwise)");
  command->add_option("--buffers", flags->plan.buffers, "Buffers per scheme message")
      ->capture_default_str();
  command
      ->add_option("--replay-messages", flags->plan.replay_messages,
                   "Messages in a capture replay list")
      ->capture_default_str();
  command->add_option("--seed", flags->plan.seed, "Payload seed (as the sweep's)")
      ->capture_default_str();
  command
      ->add_option("--inflight", flags->plan.inflight,
                   "Calls in flight of the pass; default: as `artune sweep` (the capture's p50, "
                   "else 8), at most the pass's messages")
      ->check(CLI::Range(1, 1024));
  command->add_option("--link-model", flags->model_id,
                      "Stored link model ID (`artune model list`); default: the newest");
  command->add_option("--top", flags->top, "Configs listed, fastest first")->capture_default_str();
  command->add_flag("--json", flags->json, "Print one JSON object (every config)");
  command->callback(
      [flags, &context] { RunCommand(context, [&] { return RunPredict(*flags, context); }); });
}

}  // namespace artune::cli
