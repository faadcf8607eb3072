#include "results_cluster.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "artune/cluster/cluster_choice.h"
#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_records.h"
#include "artune/cluster/cluster_summary.h"
#include "artune/db/store.h"
#include "cluster_model_text.h"
#include "cluster_text.h"
#include "format.h"
#include "stored_list.h"

namespace artune::cli {
namespace {

std::string Gain(const std::optional<double>& gain) {
  return gain ? FormatNumber(*gain, 2) + "x" : "-";
}

void PrintLinks(const tuner::ClusterData& data, const tuner::ClusterAnalysis& analysis) {
  std::vector<std::vector<std::string>> rows = {{"ROUND", "PAIR", "CLIENT", "SERVER", "STATUS",
                                                 "SWEEP", "BEST", "OBJECTIVE", "DEFAULT", "GAIN",
                                                 "WINNER", "NOTE"}};
  std::vector<bool> outlier(data.links.size(), false);
  for (const tuner::Outlier& o : analysis.outliers) outlier[o.link] = true;
  for (size_t i = 0; i < data.links.size(); ++i) {
    const db::ClusterLinkRecord& link = data.links[i];
    const tuner::LinkRow& row = analysis.rows[i];
    const bool usable = !row.best_key.empty();
    std::string note = outlier[i] ? "outlier" : "";
    if (link.status != db::LinkStatus::kOk) {
      note = link.error;
    } else if (!usable) {
      note = "no validated trial";
    }
    rows.push_back({std::to_string(link.round), std::to_string(link.pair),
                    LinkEndText(link.client_host, link.client_device),
                    LinkEndText(link.server_host, link.server_device),
                    std::string(db::LinkStatusName(link.status)),
                    link.sweep_id == 0 ? "-" : std::to_string(link.sweep_id),
                    usable ? tuner::KnobKeyText(row.best_key) : "-",
                    usable ? FormatNumber(row.best_objective, 2) : "-",
                    row.default_objective ? FormatNumber(*row.default_objective, 2) : "-",
                    Gain(row.gain),
                    row.winner_objective ? FormatNumber(*row.winner_objective, 2) : "-", note});
  }
  PrintTable(rows, {true, true, false, false, false, true, false, true, true, true, true, false},
             std::cout);
}

void PrintWinner(const tuner::ClusterData& data, const tuner::ClusterAnalysis& analysis) {
  const std::string goal(tuner::ClusterGoalName(data.input.cluster_goal));
  const auto& winner = analysis.winner.winner;
  if (!winner) {
    std::cout << "Winner   none: " << analysis.winner.reason << "\n";
    return;
  }
  const auto describe = [&](const tuner::ConfigScore& score) {
    std::string text = "worst link " + FormatNumber(score.worst, 2) + " (" +
                       tuner::LinkHosts(data.links[score.worst_link]) + ")";
    if (score.geomean_ok) text += ", geomean " + FormatNumber(score.geomean, 2);
    return text;
  };
  std::cout << "Winner   " << tuner::KnobKeyText(winner->key) << " by " << goal << ": "
            << describe(*winner) << "\n";
  std::cout << "         " << analysis.winner.reason << "\n";
  if (analysis.winner.default_score && analysis.winner.default_score->key != winner->key) {
    std::cout << "Default  " << tuner::KnobKeyText(analysis.winner.default_score->key) << ": "
              << describe(*analysis.winner.default_score) << "\n";
  } else if (!analysis.winner.default_score && !data.input.default_key.empty()) {
    std::cout << "Default  " << tuner::KnobKeyText(data.input.default_key)
              << ": not measured on every usable link\n";
  }
}

void PrintGroups(const tuner::ClusterAnalysis& analysis) {
  const tuner::HostGrouping& grouping = analysis.grouping;
  if (grouping.groups.size() <= 1) return;
  std::cout << "\nHost groups: " << grouping.reason << "\n";
  std::vector<std::vector<std::string>> rows = {{"DEVICES", "HOSTS", "LINKS", "WINNER"}};
  for (const tuner::HostGroup& group : grouping.groups) {
    std::string hosts;
    for (const std::string& host : group.hosts) hosts += (hosts.empty() ? "" : ", ") + host;
    rows.push_back({group.device_class.empty() ? "unknown" : group.device_class, hosts,
                    std::to_string(group.links.size()),
                    group.winner.winner ? tuner::KnobKeyText(group.winner.winner->key)
                                        : "none (" + group.winner.reason + ")"});
  }
  PrintTable(rows, {false, false, true, false}, std::cout);
}

// A run of link models (cluster_model.h): the models' predictions, not sweeps.
Status ShowModelCluster(db::Store& store, int64_t cluster_id, bool json) {
  ARTUNE_ASSIGN_OR_RETURN(const tuner::ClusterModelData data,
                          tuner::ReadClusterModels(store, cluster_id));
  if (json) {
    std::cout << tuner::ClusterModelJson(data).dump(2) << "\n";
    return Status::Ok();
  }
  const db::ClusterRecord& cluster = data.cluster;
  std::cout << "Cluster " << cluster.id << "  " << cluster.ranks << " ranks, pairs "
            << cluster.pairs << ", measurement model (link models), " << data.links.size()
            << " links (" << data.prediction.usable_links << " with a model)"
            << (cluster.finished_at.empty() ? ", unfinished" : "") << "\n";
  PrintClusterModelRun(data, {}, std::cout);
  return Status::Ok();
}

}  // namespace

Status ListClusters(int limit, bool json, const Context& context) {
  const StoredListing<db::ClusterRecord> listing = {
      .noun = "clusters",
      .table = "clusters",
      .command = "results",
      .kind = "cluster runs",
      .recorder = "sweep --mpi",
      .list = [](db::Store& store, int count) { return store.ListClusters(count); },
      .json = tuner::ClusterRecordJson,
      .header = {"ID", "CREATED", "RANKS", "PAIRS", "MEASUREMENT", "STATE"},
      .right_aligned = {true, false, true, false, false, false},
      .row =
          [](const db::ClusterRecord& cluster) {
            return std::vector<std::string>{
                std::to_string(cluster.id),
                ShortTime(cluster.created_at),
                std::to_string(cluster.ranks),
                cluster.pairs,
                cluster.measurement,
                cluster.finished_at.empty() ? "unfinished" : "finished"};
          },
      .show_one = "results --cluster ID",
  };
  return PrintStoredListing(listing, limit, json, context);
}

Status ShowCluster(int64_t cluster_id, tuner::ClusterGoal goal, bool json, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const db::ClusterRecord record, store->GetCluster(cluster_id));
  if (record.measurement == tuner::kModelMeasurement) {
    return ShowModelCluster(*store, cluster_id, json);
  }
  ARTUNE_ASSIGN_OR_RETURN(const tuner::ClusterData data,
                          tuner::ReadClusterData(*store, cluster_id, goal));
  const tuner::ClusterAnalysis analysis = tuner::AnalyzeCluster(data.input);
  if (json) {
    std::cout << tuner::ClusterAnalysisJson(data, analysis).dump(2) << "\n";
    return Status::Ok();
  }
  const db::ClusterRecord& cluster = data.cluster;
  std::cout << "Cluster " << cluster.id << "  " << cluster.ranks << " ranks, pairs "
            << cluster.pairs << ", measurement " << cluster.measurement << ", " << data.links.size()
            << " links (" << analysis.usable_links << " measured, " << analysis.failed_links
            << " failed)" << (cluster.finished_at.empty() ? ", unfinished" : "") << "\n";
  if (!data.objective.empty()) {
    std::cout << "Objective  " << data.objective << " (" << data.goal
              << "); each link is a sweep: `artune results --sweep ID`\n";
  }
  std::cout << "\n";
  PrintLinks(data, analysis);
  std::cout << "\n";
  PrintWinner(data, analysis);
  const std::string heatmap = ClusterHeatmapText(data, analysis, StdoutTakesColour());
  if (!heatmap.empty()) std::cout << "\n" << heatmap;
  if (!analysis.outliers.empty()) {
    std::cout << "\nOutliers (more than " << tuner::kOutlierDeviations
              << " MAD worse than the median of the links)\n";
    for (const tuner::Outlier& outlier : analysis.outliers) {
      std::cout << "  " << tuner::OutlierSentence(data, analysis, outlier) << "\n";
    }
  }
  PrintGroups(analysis);
  if (analysis.failed_links > 0) {
    std::cout << "\nFailed links\n";
    for (const db::ClusterLinkRecord& link : data.links) {
      if (link.status == db::LinkStatus::kOk) continue;
      std::cout << "  " << tuner::LinkHosts(link) << " (round " << link.round << ", pair "
                << link.pair << "): " << (link.error.empty() ? "no error stored" : link.error)
                << "\n";
    }
  }
  return Status::Ok();
}

}  // namespace artune::cli
