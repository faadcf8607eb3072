// artune results [--limit N] [--json]: the stored bench runs, newest first.
// artune results show ID [--json]: one run with its full config and parameters.
// artune results --sweeps [--json]: the stored sweeps, newest first.
// artune results --sweep ID [--json]: a sweep's trials, its chosen config against the
// default config, the default measured again at the end and the sweep's verdict,
// and a text heatmap eager_threshold x chunk_size.
// artune results --clusters / --cluster ID: cluster runs (results_cluster.h).
// artune results --models [--json]: the stored link models (`artune model measure`),
// newest first; --model ID [--json]: one model's points per protocol group.
// All read the store at --db (default: the XDG data directory) and never create it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "artune/cluster/cluster_records.h"
#include "artune/db/record_json.h"
#include "artune/db/store.h"
#include "artune/model/model_json.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/bench_record.h"
#include "artune/tuner/sweep_choice.h"
#include "artune/tuner/sweep_view.h"
#include "artune/tuner/trial_json.h"
#include "command.h"
#include "format.h"
#include "model_text.h"
#include "results_cluster.h"
#include "stored_list.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

struct ResultsOptions {
  bool json = false;
  int limit = 20;
  int64_t show_id = 0;
  int64_t sweep_id = 0;
  bool sweeps = false;
  int64_t cluster_id = 0;
  bool clusters = false;
  int64_t model_id = 0;
  bool models = false;
  std::string goal = "worst-link";
};

std::vector<std::string> RunRow(const db::BenchRun& run) {
  return {std::to_string(run.id),
          ShortTime(run.started_at),
          run.transport,
          run.benchmark,
          run.scheme,
          FormatHumanBytes(run.payload_bytes),
          FormatNumber(run.latency.p50_us, 1),
          FormatNumber(run.latency.p99_us, 1),
          FormatNumber(run.bandwidth_mbps, 1),
          FormatNumber(run.rpcs_per_s, 0),
          run.validated ? "yes" : "NO"};
}

Status List(const ResultsOptions& options, const Context& context) {
  const StoredListing<db::BenchRun> listing = {
      .noun = "runs",
      .table = "bench_runs",
      .command = "results",
      .kind = "bench runs",
      .recorder = "bench",
      .list = [](db::Store& store, int limit) { return store.ListBenchRuns(limit); },
      .json = tuner::StoredBenchRunJson,
      .header = {"ID", "TIME (UTC)", "TRANSPORT", "BENCHMARK", "SCHEME", "PAYLOAD", "P50 µs",
                 "P99 µs", "MB/s", "RPC/s", "VALIDATED"},
      .right_aligned = {true, false, false, false, false, true, true, true, true, true, false},
      .row = RunRow,
  };
  return PrintStoredListing(listing, options.limit, options.json, context);
}

Status Show(const ResultsOptions& options, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const db::BenchRun run, store->GetBenchRun(options.show_id));
  if (options.json) {
    std::cout << tuner::StoredBenchRunJson(run).dump(2) << "\n";
    return Status::Ok();
  }
  std::cout << "Bench run " << run.id << "\n";
  const std::string latency = "p50 " + FormatNumber(run.latency.p50_us, 2) + " µs, p99 " +
                              FormatNumber(run.latency.p99_us, 2) + " µs, mean " +
                              FormatNumber(run.latency.mean_us, 2) + " µs, stddev " +
                              FormatNumber(run.latency.stddev_us, 2) + " µs";
  std::vector<std::vector<std::string>> summary = {
      {"  started", run.started_at},
      {"  host", run.host},
      {"  peer", run.peer},
      {"  transport", run.transport + (run.fabric.empty() ? "" : " over " + run.fabric)},
      {"  benchmark", run.benchmark},
      {"  scheme", run.scheme},
      {"  payload",
       FormatHumanBytes(run.payload_bytes) + " (" + std::to_string(run.payload_bytes) + " bytes)"},
      {"  duration", FormatNumber(run.duration_s, 2) + " s, " + std::to_string(run.rpcs) + " RPCs"},
      {"  latency", latency},
      {"  bandwidth", FormatNumber(run.bandwidth_mbps, 1) + " MB/s"},
      {"  throughput", FormatNumber(run.rpcs_per_s, 1) + " RPC/s"},
      {"  validated", run.validated ? "yes (every response checksum matched)" : "NO"},
  };
  PrintTable(summary, {}, std::cout);
  for (const auto& [title, pairs] :
       {std::pair{"Config", &run.config}, std::pair{"Parameters", &run.parameters}}) {
    std::cout << title << (pairs->empty() ? ": (none)\n" : ":\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& [key, value] : *pairs) rows.push_back({"  " + key, value});
    PrintTable(rows, {}, std::cout);
  }
  return Status::Ok();
}

// ---- sweeps ---------------------------------------------------------------

// The default measured again at the end and what the sweep concluded from it.
void PrintVerdict(const db::SweepRecord& sweep, std::ostream& out) {
  if (!sweep.verdict) {
    out << "Verdict  "
        << (sweep.finished_at.empty() ? "not decided yet (the sweep is unfinished)"
                                      : "not stored (the sweep ran before artune kept verdicts)")
        << "\n";
    return;
  }
  auto print_again = [&](const char* label, const std::optional<db::TrialRecord>& again,
                         const char* what) {
    if (!again) return;
    out << label << db::TrialKnobKey(again->knobs) << "  ";
    if (again->status == db::TrialStatus::kFailed) {
      out << "failed";
    } else {
      out << FormatNumber(again->objective, 2) << " [" << FormatNumber(again->ci_low, 2) << ", "
          << FormatNumber(again->ci_high, 2) << "]";
      if (again->status != db::TrialStatus::kOk || !again->validated) {
        out << " " << db::TrialStatusName(again->status);
      }
    }
    out << "  (" << what << (again->error.empty() ? "" : "; " + again->error) << ")\n";
  };
  if (sweep.verdict->final_rounds > 0) {
    // The final round: the finalists and the default, pooled over interleaved rounds.
    const uint32_t rounds = sweep.verdict->final_rounds;
    out << "Final    " << rounds << " interleaved round" << (rounds == 1 ? "" : "s")
        << " of the default and " << sweep.verdict->finalists.size()
        << " finalists; the chosen config is picked here\n";
    for (const db::FinalistRecord& finalist : sweep.verdict->finalists) {
      const std::string won = "faster than the default in " + std::to_string(finalist.rounds_won) +
                              " of " + std::to_string(rounds) + " rounds";
      print_again("         ", finalist.pooled, won.c_str());
    }
    print_again("         ", sweep.verdict->default_remeasured, "the default");
  } else {
    print_again("Again    ", sweep.verdict->best_remeasured,
                "the chosen config measured again after the search, just before the default");
    print_again("Again    ", sweep.verdict->default_remeasured,
                "the default measured again after the search");
  }
  out << "Verdict  " << tuner::VerdictText(sweep.verdict->verdict) << "\n";
}

Status ListSweeps(const ResultsOptions& options, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store, OpenStoreForListing(context));
  std::vector<db::SweepRecord> sweeps;  // none in a store not made yet
  if (store != nullptr) {
    ARTUNE_ASSIGN_OR_RETURN(sweeps, store->ListSweeps(options.limit));
  }
  if (options.json) {
    ordered_json j = {{"sweeps", ordered_json::array()}};
    for (const db::SweepRecord& sweep : sweeps)
      j["sweeps"].push_back(tuner::SweepRecordJson(sweep));
    std::cout << j.dump(2) << "\n";
    return Status::Ok();
  }
  if (sweeps.empty()) {
    std::cout << "No sweeps stored yet: `artune sweep` runs one.\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "CREATED", "OBJECTIVE", "STRATEGY", "WORKLOAD", "FABRIC", "PEER", "STATE", "VERDICT"}};
  for (const db::SweepRecord& sweep : sweeps) {
    rows.push_back({std::to_string(sweep.id), ShortTime(sweep.created_at), sweep.objective,
                    sweep.strategy, sweep.workload, sweep.fabric, sweep.peer,
                    sweep.finished_at.empty() ? "unfinished" : "finished",
                    sweep.verdict ? std::string(db::VerdictName(sweep.verdict->verdict)) : "-"});
  }
  PrintTable(rows, {true, false, false, false, false, false, false, false, false}, std::cout);
  return Status::Ok();
}

// The lines above the trial table: what was swept, how, under which load.
void PrintSweepHeader(const tuner::SweepView& view, std::optional<int64_t> cluster_id) {
  const db::SweepRecord& sweep = view.sweep;
  std::cout << "Sweep " << sweep.id << "  " << sweep.objective << " (" << sweep.goal << "), "
            << sweep.strategy << ", " << sweep.workload << ", " << sweep.fabric << " to "
            << sweep.peer << ", " << view.trials.size() << " trials"
            << (sweep.finished_at.empty() ? " (unfinished: `artune sweep --resume " +
                                                std::to_string(sweep.id) + "` continues it)"
                                          : "")
            << "\n";
  std::cout << "Search space  " << sweep.search_space << "\n";
  std::cout << "Load          "
            << (sweep.background_load == 0
                    ? std::string(
                          "none stated (`artune sweep --background-load N` measures beside N "
                          "CPU hogs)")
                    : std::to_string(sweep.background_load) + " CPU hog" +
                          (sweep.background_load == 1 ? "" : "s") + " beside every measurement")
            << "\n";
  if (cluster_id) {
    std::cout << "Cluster       this sweep measured one link of cluster " << *cluster_id
              << " (`artune results --cluster " << *cluster_id << "`)\n";
  }
  std::cout << "\n";
}

// Whether the search's best trial is another than the chosen config: then it is
// named as such beside the chosen one.
bool SearchBestDiffers(const tuner::SweepView& view) {
  return view.search_best && (!view.best || view.best->id != view.search_best->id);
}

// Every trial, the chosen one, the search's best (when another) and the default noted.
void PrintTrialTable(const tuner::SweepView& view) {
  const std::optional<db::TrialRecord>& best = view.best;
  const std::optional<db::TrialRecord>& default_trial = view.default_trial;
  std::vector<std::vector<std::string>> rows = {
      {"ID", "KNOBS", "STATUS", "OBJECTIVE", "CI LOW", "CI HIGH", "N", "NOTE"}};
  for (const db::TrialRecord& trial : view.trials) {
    std::string note;
    const auto add = [&](const char* what) {
      note += (note.empty() ? "" : ", ") + std::string(what);
    };
    if (best && trial.id == best->id) add("chosen");
    if (SearchBestDiffers(view) && trial.id == view.search_best->id) add("search's best");
    if (default_trial && trial.id == default_trial->id) add("default");
    if (!trial.error.empty()) note += (note.empty() ? "" : "; ") + trial.error;
    rows.push_back({std::to_string(trial.id), db::TrialKnobKey(trial.knobs),
                    std::string(db::TrialStatusName(trial.status)),
                    FormatNumber(trial.objective, 2), FormatNumber(trial.ci_low, 2),
                    FormatNumber(trial.ci_high, 2), std::to_string(trial.samples), note});
  }
  PrintTable(rows, {true, false, false, true, true, true, true, false}, std::cout);
  std::cout << "\n";
}

// The chosen config, the search's best trial when it is another, and the default,
// each with its interval.
void PrintChosenAndDefault(const tuner::SweepView& view) {
  if (view.best) {
    const db::TrialRecord& best = *view.best;
    std::cout << "Chosen   " << db::TrialKnobKey(best.knobs) << "  "
              << FormatNumber(best.objective, 2) << " [" << FormatNumber(best.ci_low, 2) << ", "
              << FormatNumber(best.ci_high, 2) << "]  (`artune apply config --sweep "
              << view.sweep.id << "` writes it)\n";
  } else {
    std::cout << "Chosen   none (no trial validated)\n";
  }
  if (SearchBestDiffers(view)) {
    const db::TrialRecord& search_best = *view.search_best;
    std::cout << "Search's best trial  " << db::TrialKnobKey(search_best.knobs) << "  "
              << FormatNumber(search_best.objective, 2) << " ["
              << FormatNumber(search_best.ci_low, 2) << ", " << FormatNumber(search_best.ci_high, 2)
              << "]  (not chosen: the final round judged the chosen config better)\n";
  }
  if (view.default_trial) {
    const db::TrialRecord& default_trial = *view.default_trial;
    std::cout << "Default  " << db::TrialKnobKey(default_trial.knobs) << "  "
              << FormatNumber(default_trial.objective, 2) << " ["
              << FormatNumber(default_trial.ci_low, 2) << ", "
              << FormatNumber(default_trial.ci_high, 2) << "]\n";
  }
}

// The heatmap cell's text: the objective (* on the chosen config), or why there is none.
std::string HeatmapCellText(const db::TrialRecord* cell,
                            const std::optional<db::TrialRecord>& best) {
  if (cell == nullptr) return "-";
  if (cell->status == db::TrialStatus::kFailed) return "FAIL";
  if (cell->status == db::TrialStatus::kInvalid) return "BAD";
  return FormatNumber(cell->objective, 1) + (best && cell->id == best->id ? "*" : "");
}

// The text heatmap eager_threshold x chunk_size; the caller checks view.heatmap().
void PrintHeatmap(const tuner::SweepView& view) {
  std::cout << "\n" << view.sweep.objective << " by eager_threshold (rows) x chunk_size (columns)";
  if (!view.held.empty()) {
    std::string at;
    for (const auto& [name, value] : view.held) {
      at += (at.empty() ? "" : ", ") + name + "=" + value;
    }
    std::cout << " at the chosen config's " << at;
  }
  std::cout << "; * chosen, - not measured, FAIL failed, BAD corrupted data\n";
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> header = {"eager \\ chunk"};
  for (const std::string& chunk : view.chunks) header.push_back(chunk);
  grid.push_back(header);
  for (const std::string& eager : view.eagers) {
    std::vector<std::string> row = {eager};
    for (const std::string& chunk : view.chunks) {
      row.push_back(
          HeatmapCellText(tuner::HeatmapCell(view.trials, view.best, eager, chunk), view.best));
    }
    grid.push_back(std::move(row));
  }
  std::vector<bool> right(grid.front().size(), true);
  right[0] = false;
  PrintTable(grid, right, std::cout);
}

Status ShowSweep(const ResultsOptions& options, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::SweepView view,
                          tuner::ReadSweepView(*store, options.sweep_id));
  // The cluster run this sweep measured a link of, if any.
  ARTUNE_ASSIGN_OR_RETURN(const std::optional<int64_t> cluster_id,
                          tuner::FindClusterOfSweep(*store, view.sweep.id));
  if (options.json) {
    std::cout << tuner::SweepViewJson(view, cluster_id).dump(2) << "\n";
    return Status::Ok();
  }
  PrintSweepHeader(view, cluster_id);
  PrintTrialTable(view);
  PrintChosenAndDefault(view);
  PrintVerdict(view.sweep, std::cout);
  if (view.heatmap()) PrintHeatmap(view);
  return Status::Ok();
}

// ---- link models -----------------------------------------------------------

Status ShowLinkModel(const ResultsOptions& options, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const db::LinkModelRecord model, store->GetLinkModel(options.model_id));
  if (options.json) {
    std::cout << model::LinkModelJson(model, true).dump(2) << "\n";
    return Status::Ok();
  }
  PrintLinkModel(model);
  std::cout << "\n`artune predict --workload ID --link-model " << model.id
            << "` costs a capture's configs with it; `artune report --model " << model.id
            << "` draws it\n";
  return Status::Ok();
}

}  // namespace

void RegisterResults(CLI::App& root, Context& context) {
  auto options = std::make_shared<ResultsOptions>();
  auto* command = root.add_subcommand(
      "results", "List the stored bench runs, newest first (`results show ID` for one in full)");
  command->add_flag("--json", options->json, "Print one JSON object instead of the table");
  command->add_option("--limit", options->limit, "Show the N newest runs; 0 shows all")
      ->capture_default_str();
  command->add_option(
      "--sweep", options->sweep_id,
      "Show sweep ID: its trials, the chosen config, the default measured again and "
      "the verdict, and a heatmap eager_threshold x chunk_size");
  command->add_flag("--sweeps", options->sweeps, "List the stored sweeps instead of bench runs");
  auto* cluster =
      command->add_option("--cluster", options->cluster_id,
                          "Show cluster run ID (`artune sweep --mpi`): each link's best config "
                          "against the default, the cluster's winner, a host x host heatmap, the "
                          "outlier links, host groups with different devices, the failed links");
  command->add_flag("--clusters", options->clusters,
                    "List the stored cluster runs instead of bench runs");
  command
      ->add_option("--goal", options->goal,
                   "How --cluster picks the winner among the configs every link measured: "
                   "worst-link (the best worst link) or geomean (the best geometric mean)")
      ->check(CLI::IsMember({"worst-link", "geomean"}))
      ->capture_default_str()
      ->needs(cluster);
  auto* model = command->add_option(
      "--model", options->model_id,
      "Show link model ID (`artune model measure`): per protocol, chunk size and depth, and "
      "polling mode, the time of a call per slice size and calls in flight");
  command->add_flag("--models", options->models,
                    "List the stored link models instead of bench runs");
  model->check(CLI::PositiveNumber);
  command->footer(
      "Reads the store at --db (default: $ARTUNE_DB, else $XDG_DATA_HOME/artune/artune.db); "
      "`artune bench` writes it.");

  auto* show =
      command->add_subcommand("show", "Print one bench run with its config and parameters");
  show->add_option("id", options->show_id, "Run id (the ID column of `artune results`)")
      ->required();
  // Accepted before or after `show`: both set the same flag.
  show->add_flag("--json", options->json, "Print the run as one JSON object");

  show->callback(
      [options, &context] { RunCommand(context, [&] { return Show(*options, context); }); });
  command->callback([options, show, &context] {
    if (show->parsed()) return;  // the subcommand did the work
    RunCommand(context, [&] {
      if (options->cluster_id != 0) {
        return ShowCluster(options->cluster_id, *tuner::ParseClusterGoal(options->goal),
                           options->json, context);
      }
      if (options->model_id != 0) return ShowLinkModel(*options, context);
      if (options->models) {
        return PrintStoredListing(LinkModelListing("results --model ID"), options->limit,
                                  options->json, context);
      }
      if (options->clusters) return ListClusters(options->limit, options->json, context);
      if (options->sweep_id != 0) return ShowSweep(*options, context);
      if (options->sweeps) return ListSweeps(*options, context);
      return List(*options, context);
    });
  });
}

}  // namespace artune::cli
