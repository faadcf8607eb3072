#include "artune/cluster/cluster_records.h"

namespace artune::tuner {

Result<ClusterData> ReadClusterData(db::Store& store, int64_t cluster_id,
                                    ClusterGoal cluster_goal) {
  ClusterData data;
  ARTUNE_ASSIGN_OR_RETURN(data.cluster, store.GetCluster(cluster_id));
  ARTUNE_ASSIGN_OR_RETURN(data.links, store.ListClusterLinks(cluster_id));
  data.input.cluster_goal = cluster_goal;
  const std::string cluster_name = "cluster " + std::to_string(cluster_id);
  for (const db::ClusterLinkRecord& record : data.links) {
    LinkInput link;
    link.client = {record.client_host, record.client_device};
    link.server = {record.server_host, record.server_device};
    link.ok = record.status == db::LinkStatus::kOk;
    link.error = record.error;
    std::optional<db::SweepRecord> sweep;
    if (record.sweep_id != 0) {
      ARTUNE_ASSIGN_OR_RETURN(sweep, store.GetSweep(record.sweep_id));
      if (data.objective.empty()) {
        data.objective = sweep->objective;
        data.goal = sweep->goal;
        data.input.default_key = sweep->default_knobs;
      } else if (sweep->objective != data.objective || sweep->goal != data.goal) {
        return Status::Corruption(cluster_name + "'s links measured different objectives (" +
                                  data.objective + " and " + sweep->objective + " in sweep " +
                                  std::to_string(sweep->id) + "): their values cannot be compared");
      }
      ARTUNE_ASSIGN_OR_RETURN(const std::vector<db::TrialRecord> trials,
                              store.ListTrials(record.sweep_id));
      for (const db::TrialRecord& trial : trials) {
        if (trial.status != db::TrialStatus::kOk || !trial.validated) continue;
        link.objectives[db::TrialKnobKey(trial.knobs)] = trial.objective;
      }
      if (sweep->verdict) link.chosen = sweep->verdict->best_knobs;
    }
    data.input.links.push_back(std::move(link));
    data.sweeps.push_back(std::move(sweep));
  }
  data.input.goal = ParseGoal(data.goal).value_or(ObjectiveGoal::kMin);
  return data;
}

Result<std::optional<int64_t>> FindClusterOfSweep(db::Store& store, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<db::ClusterRecord> clusters, store.ListClusters(0));
  for (const db::ClusterRecord& cluster : clusters) {
    ARTUNE_ASSIGN_OR_RETURN(const std::vector<db::ClusterLinkRecord> links,
                            store.ListClusterLinks(cluster.id));
    for (const db::ClusterLinkRecord& link : links) {
      if (link.sweep_id == sweep_id) return std::optional<int64_t>(cluster.id);
    }
  }
  return std::optional<int64_t>();
}

}  // namespace artune::tuner
