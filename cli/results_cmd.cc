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
#include "artune/report/bench_text.h"
#include "artune/report/sweep_text.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/bench_record.h"
#include "artune/tuner/sweep_view.h"
#include "artune/tuner/trial_json.h"
#include "command.h"
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
      .row = report::StoredBenchRunRow,
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
  report::PrintStoredBenchRun(run, std::cout);
  return Status::Ok();
}

// ---- sweeps ---------------------------------------------------------------

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
  report::PrintSweepList(sweeps, std::cout);
  return Status::Ok();
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
  report::PrintSweepText(view, cluster_id, std::cout);
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
