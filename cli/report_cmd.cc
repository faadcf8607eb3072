// artune report: one self-contained HTML file (inline SVG charts and tables, no
// scripts or network references) of a stored capture, sweep, cluster run or link
// model, to
// open in a browser. Thin over the report library (cli/report/include/artune/report/).
#include <algorithm>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_records.h"
#include "artune/probes/profile_output.h"
#include "artune/report/capture_report.h"
#include "artune/report/cluster_model_report.h"
#include "artune/report/cluster_report.h"
#include "artune/report/html.h"
#include "artune/report/model_report.h"
#include "artune/report/sweep_report.h"
#include "command.h"
#include "format.h"

namespace artune::cli {
namespace {

struct ReportOptions {
  int64_t capture_id = 0;
  int64_t sweep_id = 0;
  int64_t cluster_id = 0;
  int64_t model_id = 0;
  std::string goal = "worst-link";
  std::string output;  // empty: report-<kind>-<id>.html in the current directory
  bool json = false;
};

Result<std::string> CaptureReport(db::Store& store, int64_t id, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(const db::CaptureRecord capture, store.GetCapture(id));
  Result<probes::Profile> profile = probes::ProfileFromJson(capture.profile_json);
  if (!profile.ok()) {
    return profile.status().WithContext("capture " + std::to_string(id) + " in " +
                                        db::ResolveDatabasePath(context.globals.db_path) +
                                        " has an unreadable profile");
  }
  profile->capture_id = capture.id;
  return report::CaptureReportHtml(capture, *profile);
}

Result<std::string> SweepReport(db::Store& store, int64_t id) {
  ARTUNE_ASSIGN_OR_RETURN(const db::SweepRecord sweep, store.GetSweep(id));
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<db::TrialRecord> trials, store.ListTrials(id));
  ARTUNE_ASSIGN_OR_RETURN(const std::optional<db::TrialRecord> best, store.BestTrial(id));
  return report::SweepReportHtml(sweep, trials, best);
}

Result<std::string> ClusterReport(db::Store& store, int64_t id, const std::string& goal) {
  ARTUNE_ASSIGN_OR_RETURN(const db::ClusterRecord cluster, store.GetCluster(id));
  if (cluster.measurement == tuner::kModelMeasurement) {
    ARTUNE_ASSIGN_OR_RETURN(const tuner::ClusterModelData data,
                            tuner::ReadClusterModels(store, id));
    return report::ClusterModelReportHtml(data);
  }
  ARTUNE_ASSIGN_OR_RETURN(const tuner::ClusterData data,
                          tuner::ReadClusterData(store, id, *tuner::ParseClusterGoal(goal)));
  return report::ClusterReportHtml(data, tuner::AnalyzeCluster(data.input));
}

Status Report(const ReportOptions& options, const Context& context) {
  // The one record asked for (the flags exclude each other).
  const std::pair<std::string, int64_t> asked[] = {{"capture", options.capture_id},
                                                   {"sweep", options.sweep_id},
                                                   {"cluster", options.cluster_id},
                                                   {"model", options.model_id}};
  const auto* chosen = std::find_if(std::begin(asked), std::end(asked),
                                    [](const auto& entry) { return entry.second != 0; });
  if (chosen == std::end(asked)) {
    return Status::InvalidArgument(
        "artune report needs --capture ID, --sweep ID, --cluster ID or --model ID");
  }
  const auto& [kind, id] = *chosen;
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  std::string html;
  if (kind == "capture") {
    ARTUNE_ASSIGN_OR_RETURN(html, CaptureReport(*store, id, context));
  } else if (kind == "cluster") {
    ARTUNE_ASSIGN_OR_RETURN(html, ClusterReport(*store, id, options.goal));
  } else if (kind == "model") {
    ARTUNE_ASSIGN_OR_RETURN(const db::LinkModelRecord model, store->GetLinkModel(id));
    html = report::LinkModelReportHtml(model);
  } else {
    ARTUNE_ASSIGN_OR_RETURN(html, SweepReport(*store, id));
  }
  const std::string path = options.output.empty()
                               ? "report-" + kind + "-" + std::to_string(id) + ".html"
                               : options.output;
  ARTUNE_RETURN_IF_ERROR(report::WriteFileAtomically(path, html));
  if (options.json) {
    nlohmann::ordered_json out;
    out["kind"] = kind;
    out["id"] = id;
    out["output"] = path;
    out["bytes"] = html.size();
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "Wrote " << path << " (" << FormatHumanBytes(html.size()) << "): the " << kind
              << " " << id << " report; open it in a browser.\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterReport(CLI::App& root, Context& context) {
  auto options = std::make_shared<ReportOptions>();
  auto* command = root.add_subcommand(
      "report",
      "Write one self-contained HTML report (charts and tables, no scripts or network "
      "references) of a stored capture, sweep, cluster run or link model");
  auto* capture = command->add_option(
      "--capture", options->capture_id,
      "Capture id (`artune captures`): per-method tables, message-size and iovec-size "
      "histograms coloured by size class, the payload scheme, the errors");
  capture->check(CLI::PositiveNumber);
  auto* sweep = command->add_option(
      "--sweep", options->sweep_id,
      "Sweep id (`artune sweep`): the eager_threshold x chunk_size heatmap of the objective "
      "with the chosen config marked, the chosen config against the defaults, every trial");
  sweep->check(CLI::PositiveNumber);
  capture->excludes(sweep);
  auto* cluster = command->add_option(
      "--cluster", options->cluster_id,
      "Cluster run id (`artune results --clusters`): the host x host heatmap of the objective "
      "under the cluster's winner with the outlier links marked, the winner against the "
      "default, the host groups, every link; for a model run (`sweep --mpi --strategy model`) "
      "the cluster's predicted best, each link's model and predicted best, the outliers");
  cluster->check(CLI::PositiveNumber);
  cluster->excludes(capture);
  cluster->excludes(sweep);
  auto* model = command->add_option(
      "--model", options->model_id,
      "Link model id (`artune results --models`): per polling mode and calls in flight, the "
      "time of a call against the unit's size for every protocol, and every point");
  model->check(CLI::PositiveNumber);
  for (auto* other : {capture, sweep, cluster}) model->excludes(other);
  command
      ->add_option("--goal", options->goal,
                   "With --cluster: worst-link (the config whose worst link is best) or "
                   "geomean (the best geometric mean over the links)")
      ->check(CLI::IsMember({"worst-link", "geomean"}))
      ->capture_default_str()
      ->needs(cluster);
  command->add_option(
      "-o,--output", options->output,
      "File to write (default: report-<capture|sweep|cluster|model>-<id>.html in the current "
      "directory); replaced whole, never left half-written");
  command->add_flag("--json", options->json,
                    "Print where the report went as one JSON object {kind, id, output, bytes}");
  command->footer(
      "Reads the store at --db (default: $ARTUNE_DB, else $XDG_DATA_HOME/artune/artune.db).\n"
      "Examples:\n  artune report --capture 3 --output traffic.html\n  artune report --sweep 2\n  "
      "artune report --cluster 1\n  artune report --model 2");
  command->callback(
      [options, &context] { RunCommand(context, [&] { return Report(*options, context); }); });
}

}  // namespace artune::cli
