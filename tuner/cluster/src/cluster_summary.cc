#include "artune/cluster/cluster_summary.h"

#include <optional>
#include <vector>

#include "artune/base/number_text.h"
#include "artune/cluster/cluster_choice.h"

namespace artune::tuner {

using nlohmann::ordered_json;

std::string LinkHosts(const db::ClusterLinkRecord& link) {
  return link.client_host + " ↔ " + link.server_host;
}

std::string WorseWord(const ClusterData& data) {
  return data.input.goal == ObjectiveGoal::kMax ? "lower" : "slower";
}

std::string OutlierSentence(const ClusterData& data, const ClusterAnalysis& analysis,
                            const Outlier& outlier) {
  return "look at the link " + LinkHosts(data.links[outlier.link]) + ": " +
         FormatDeviations(outlier.deviations) + " MAD " + WorseWord(data) +
         " than the median under " + (analysis.matrix.is_winner ? "the winner" : "the default") +
         " (" + FormatNumber(outlier.objective, 2) + " against " + FormatNumber(outlier.median, 2) +
         ")";
}

ordered_json ClusterRecordJson(const db::ClusterRecord& cluster) {
  return {{"id", cluster.id},
          {"created_at", cluster.created_at},
          {"finished_at", cluster.finished_at},
          {"ranks", cluster.ranks},
          {"pairs", cluster.pairs},
          {"measurement", cluster.measurement},
          {"parameters", cluster.parameters}};
}

namespace {

ordered_json Optional(const std::optional<double>& value) {
  return value ? ordered_json(*value) : ordered_json();
}

ordered_json ScoreJson(const ClusterData& data, const std::optional<ConfigScore>& score) {
  if (!score) return nullptr;
  const db::ClusterLinkRecord& worst = data.links[score->worst_link];
  return {{"knobs", score->key},
          {"score", score->score},
          {"worst", score->worst},
          {"worst_link",
           {{"client_host", worst.client_host},
            {"server_host", worst.server_host},
            {"round", worst.round},
            {"pair", worst.pair}}},
          {"geomean", score->geomean_ok ? ordered_json(score->geomean) : ordered_json()}};
}

// Every link: its ends, status, best config against the default and the winner.
ordered_json LinksJson(const ClusterData& data, const ClusterAnalysis& analysis) {
  std::vector<bool> outlier(data.links.size(), false);
  for (const Outlier& o : analysis.outliers) outlier[o.link] = true;
  ordered_json links = ordered_json::array();
  for (size_t i = 0; i < data.links.size(); ++i) {
    const db::ClusterLinkRecord& link = data.links[i];
    const LinkRow& row = analysis.rows[i];
    links.push_back(
        {{"round", link.round},
         {"pair", link.pair},
         {"client",
          {{"rank", link.client_rank}, {"host", link.client_host}, {"device", link.client_device}}},
         {"server",
          {{"rank", link.server_rank}, {"host", link.server_host}, {"device", link.server_device}}},
         {"status", std::string(db::LinkStatusName(link.status))},
         {"error", link.error},
         {"sweep_id", link.sweep_id == 0 ? ordered_json() : ordered_json(link.sweep_id)},
         {"best", row.best_key.empty()
                      ? ordered_json()
                      : ordered_json({{"knobs", row.best_key}, {"objective", row.best_objective}})},
         {"default_objective", Optional(row.default_objective)},
         {"gain", Optional(row.gain)},
         {"winner_objective", Optional(row.winner_objective)},
         {"outlier", outlier[i]}});
  }
  return links;
}

// The host x host heatmap under one config.
ordered_json HeatmapJson(const HostMatrix& matrix) {
  ordered_json cells = ordered_json::array();
  for (const auto& row : matrix.cells) {
    ordered_json cells_row = ordered_json::array();
    for (const auto& cell : row) cells_row.push_back(Optional(cell.value));
    cells.push_back(std::move(cells_row));
  }
  return {{"knobs", matrix.config_key.empty() ? ordered_json() : ordered_json(matrix.config_key)},
          {"under", matrix.is_winner ? "winner" : "default"},
          {"rows", "client_host"},
          {"columns", "server_host"},
          {"hosts", matrix.hosts},
          {"omitted_hosts", matrix.omitted_hosts},
          {"cells", cells}};
}

ordered_json OutliersJson(const ClusterData& data, const ClusterAnalysis& analysis) {
  ordered_json outliers = ordered_json::array();
  for (const Outlier& o : analysis.outliers) {
    const db::ClusterLinkRecord& link = data.links[o.link];
    outliers.push_back({{"client_host", link.client_host},
                        {"server_host", link.server_host},
                        {"round", link.round},
                        {"pair", link.pair},
                        {"knobs", o.config_key},
                        {"objective", o.objective},
                        {"median", o.median},
                        {"scale", o.scale},
                        {"deviations", o.deviations},
                        {"message", OutlierSentence(data, analysis, o)}});
  }
  return outliers;
}

ordered_json HostGroupsJson(const HostGrouping& grouping) {
  ordered_json groups = ordered_json::array();
  for (const HostGroup& group : grouping.groups) {
    groups.push_back(
        {{"device_class", group.device_class},
         {"hosts", group.hosts},
         {"links", group.links.size()},
         {"winner", group.winner.winner ? ordered_json(group.winner.winner->key) : ordered_json()},
         {"reason", group.winner.reason}});
  }
  return {{"split", grouping.groups.size() > 1},
          {"winners_differ", grouping.winners_differ},
          {"reason", grouping.reason},
          {"groups", groups}};
}

}  // namespace

ordered_json ClusterAnalysisJson(const ClusterData& data, const ClusterAnalysis& analysis) {
  ordered_json j;
  j["cluster"] = ClusterRecordJson(data.cluster);
  j["objective"] = data.objective;
  j["goal"] = data.goal;
  j["cluster_goal"] = std::string(ClusterGoalName(data.input.cluster_goal));
  j["default"] = data.input.default_key;
  j["usable_links"] = analysis.usable_links;
  j["failed_links"] = analysis.failed_links;
  j["links"] = LinksJson(data, analysis);
  j["winner"] = ScoreJson(data, analysis.winner.winner);
  j["winner_reason"] = analysis.winner.reason;
  j["default_score"] = ScoreJson(data, analysis.winner.default_score);
  j["candidates"] = ordered_json::array();
  for (const ConfigScore& score : analysis.winner.candidates) {
    j["candidates"].push_back(ScoreJson(data, score));
  }
  j["heatmap"] = HeatmapJson(analysis.matrix);
  j["outliers"] = OutliersJson(data, analysis);
  j["host_groups"] = HostGroupsJson(analysis.grouping);
  j["failed"] = ordered_json::array();
  for (const db::ClusterLinkRecord& link : data.links) {
    if (link.status == db::LinkStatus::kOk) continue;
    j["failed"].push_back({{"client_host", link.client_host},
                           {"server_host", link.server_host},
                           {"round", link.round},
                           {"pair", link.pair},
                           {"error", link.error}});
  }
  return j;
}

Result<std::vector<LinkVerdict>> ReadLinkVerdicts(db::Store& store, int64_t cluster_id) {
  ARTUNE_ASSIGN_OR_RETURN(std::vector<db::ClusterLinkRecord> links,
                          store.ListClusterLinks(cluster_id));
  std::vector<LinkVerdict> out;
  for (db::ClusterLinkRecord& link : links) {
    std::optional<db::SweepVerdict> verdict;
    if (link.sweep_id != 0) {
      ARTUNE_ASSIGN_OR_RETURN(db::SweepRecord sweep, store.GetSweep(link.sweep_id));
      verdict = sweep.verdict;
    }
    out.push_back({std::move(link), std::move(verdict)});
  }
  return out;
}

ordered_json LinkEndsJson(const db::ClusterLinkRecord& link) {
  return {{"round", link.round},
          {"pair", link.pair},
          {"client_rank", link.client_rank},
          {"client_host", link.client_host},
          {"client_device", link.client_device},
          {"server_rank", link.server_rank},
          {"server_host", link.server_host},
          {"server_device", link.server_device},
          {"status", db::LinkStatusName(link.status)},
          {"error", link.error}};
}

ordered_json RunLinkJson(const LinkVerdict& entry, std::optional<double> seconds) {
  const db::ClusterLinkRecord& link = entry.link;
  const std::optional<db::SweepVerdict>& verdict = entry.verdict;
  ordered_json j = LinkEndsJson(link);
  j["sweep_id"] = link.sweep_id == 0 ? ordered_json(nullptr) : ordered_json(link.sweep_id);
  j["verdict"] = verdict ? ordered_json(db::VerdictName(verdict->verdict)) : ordered_json(nullptr);
  j["winner"] = verdict ? ordered_json(verdict->best_knobs) : ordered_json(nullptr);
  j["seconds"] = seconds ? ordered_json(*seconds) : ordered_json(nullptr);
  j["measured_now"] = seconds.has_value();
  return j;
}

}  // namespace artune::tuner
