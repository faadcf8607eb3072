// artune model: measure a link's model (what a slice costs per protocol, polling
// mode, size and calls in flight) in a few tens of seconds, and list or show the
// stored ones. `artune predict` costs a workload with one. Thin over
// artune/model/measure.h; a command of its own rather than `sweep --strategy
// model` because it measures protocols, not configs: none of sweep's objective,
// finalists or resume apply, and its records are not trials.
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "artune/db/fallback_store.h"
#include "artune/model/link_model.h"
#include "artune/model/measure.h"
#include "artune/model/model_json.h"
#include "artune/transport/knobs.h"
#include "command.h"
#include "format.h"
#include "knob_flags.h"
#include "model_text.h"
#include "progress.h"
#include "stored_list.h"

namespace artune::cli {
namespace {

struct ModelFlags {
  KnobFlags knobs;
  std::string fabric;
  std::string peer;
  double budget_s = 30;
  uint32_t rounds = 1;
  std::vector<std::string> pollings = {"busy", "event", "adaptive"};
  std::vector<uint32_t> inflights = {1, 4};
  std::vector<uint32_t> slice_counts = {2, 8};
  int64_t id = 0;
  int limit = 20;
  bool json = false;
};

Result<model::MeasureOptions> OptionsFromFlags(const ModelFlags& flags) {
  model::MeasureOptions options;
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  options.base = loaded.config;
  if (!flags.fabric.empty()) {
    ARTUNE_RETURN_IF_ERROR(transport::SetKnob(options.base, "fabric", flags.fabric));
  }
  options.peer = flags.peer;
  options.budget_s = flags.budget_s;
  options.rounds = flags.rounds;
  options.min_rounds = 1;
  options.pollings.clear();
  for (const std::string& name : flags.pollings) {
    ARTUNE_ASSIGN_OR_RETURN(auto polling, model::ParsePolling(name));
    options.pollings.push_back(polling);
  }
  options.inflights = flags.inflights;
  options.slice_counts = flags.slice_counts;
  return options;
}

Status Measure(const ModelFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(const model::MeasureOptions options, OptionsFromFlags(flags));
  ARTUNE_ASSIGN_OR_RETURN(
      std::unique_ptr<db::FallbackStore> store,
      db::FallbackStore::Open(db::ResolveDatabasePath(context.globals.db_path), std::cerr));
  ProgressLine progress(context);
  ARTUNE_ASSIGN_OR_RETURN(
      model::MeasureReport report,
      model::MeasureLinkModel(options, [&progress](const model::MeasureProgress& p) {
        if (!progress.drawing()) return;
        progress.Update("round " + std::to_string(p.round) +
                        " of <=" + std::to_string(p.rounds_planned) + ": group " +
                        std::to_string(p.groups_done + 1) + "/" + std::to_string(p.groups) + " " +
                        p.group + ", " + FormatDuration(p.elapsed_s) + " so far");
      }));
  progress.Clear();
  db::LinkModelRecord record = model::ToRecord(report.model, report.rounds, report.duration_s);
  auto id = store->InsertLinkModel(record);
  if (id.ok()) record.id = *id;
  const Status not_stored =
      id.ok() ? store->NotStoredStatus("the link model above was not stored") : id.status();
  if (flags.json) {
    std::cout << model::MeasuredLinkModelJson(record, report, not_stored.ok()).dump(2) << "\n";
  } else {
    PrintLinkModel(record);
    std::cout << "\n"
              << record.points.size() << " points; spread over rounds: median "
              << PercentText(report.median_spread) << ", worst " << PercentText(report.worst_spread)
              << " (" << report.worst_point << ")";
    if (report.unstable_points > 0) {
      std::cout << "; " << report.unstable_points
                << " points never had two samples agree within 10 % (the closest kept)";
    }
    std::cout << "\n";
    if (!report.busy_polling_skipped.empty()) std::cout << report.busy_polling_skipped << "\n";
    if (not_stored.ok()) {
      std::cout << "`artune predict --workload ID --link-model " << record.id
                << "` costs a capture's configs with it\n";
    }
  }
  return not_stored;
}

Status Show(const ModelFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const db::LinkModelRecord record, store->GetLinkModel(flags.id));
  if (flags.json) {
    std::cout << model::LinkModelJson(record, true).dump(2) << "\n";
  } else {
    PrintLinkModel(record);
  }
  return Status::Ok();
}

Status List(const ModelFlags& flags, Context& context) {
  return PrintStoredListing(LinkModelListing("model show ID"), flags.limit, flags.json, context);
}

}  // namespace

void RegisterModel(CLI::App& root, Context& context) {
  CLI::App* model = root.add_subcommand(
      "model",
      "Measure a link model (per protocol, polling mode, slice size and calls in flight: the "
      "time of a call) for `artune predict`; list and show stored ones");
  model->require_subcommand(1);
  auto flags = std::make_shared<ModelFlags>();
  CLI::App* measure = model->add_subcommand(
      "measure",
      "Measure this link's model within --budget seconds (30 by default): eager, coalesced "
      "eager, rendezvous read and chunked rendezvous (chunks 64KiB, 512KiB, 4MiB at depths 1, "
      "4, 16), slices 64B..10MiB at log2 sizes (x16, refined where the curve bends), each "
      "forced by its knobs; a point is sampled until two samples agree within 10 %");
  AddKnobFlags(*measure, flags->knobs);
  measure->add_option("--fabric", flags->fabric, "tcp | verbs | shm | auto (default: the config's)")
      ->check(CLI::IsMember({"tcp", "verbs", "auto", "shm"}));
  measure
      ->add_option("--peer", flags->peer,
                   "host:port of `artune serve` (default: a loopback server in this process)")
      ->check(HostPortValidator());
  measure
      ->add_option("--budget", flags->budget_s,
                   "Seconds to spend: curves are refined only while on schedule, and no extra "
                   "round starts that would end past it (the first round always completes)")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  measure
      ->add_option("--rounds", flags->rounds,
                   "At most this many interleaved rounds (more than 1: the first round's sizes "
                   "measured again, medians kept)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  measure
      ->add_option("--polling", flags->pollings,
                   "Polling modes to measure (comma-separated; busy is left out, and said so, "
                   "where the host has no core free beside its spinning progress threads "
                   "unless asked for alone)")
      ->delimiter(',')
      ->check(CLI::IsMember({"busy", "event", "adaptive"}))
      ->capture_default_str();
  measure
      ->add_option("--inflight", flags->inflights,
                   "Calls in flight to measure at (comma-separated; predict interpolates)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  measure
      ->add_option("--slices", flags->slice_counts,
                   "Rendezvous calls of several slices to measure (comma-separated counts, "
                   "2..64; 1 slice per call always): at the coarse sizes, the first --inflight, "
                   "each call at most 16MiB; predict costs a message's rendezvous slices by them")
      ->delimiter(',')
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  measure->add_flag("--json", flags->json, "Print the model as one JSON object");
  measure->callback(
      [flags, &context] { RunCommand(context, [&] { return Measure(*flags, context); }); });

  CLI::App* list = model->add_subcommand("list", "List stored link models, newest first");
  list->add_option("--limit", flags->limit, "Newest N models (0: all)")->capture_default_str();
  list->add_flag("--json", flags->json, "Print one JSON object");
  list->callback([flags, &context] { RunCommand(context, [&] { return List(*flags, context); }); });

  CLI::App* show = model->add_subcommand("show", "Show one stored link model's points");
  show->add_option("id", flags->id, "Link model ID (`artune model list`)")->required();
  show->add_flag("--json", flags->json, "Print one JSON object");
  show->callback([flags, &context] { RunCommand(context, [&] { return Show(*flags, context); }); });
}

}  // namespace artune::cli
