#include "home_source.h"

#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_records.h"

namespace artune::dashboard {

HomeSource::HomeSource(std::string database_path, int rows)
    : store_(std::move(database_path),
             "no store yet: artune probe, sweep and bench record there (or --db)"),
      rows_(rows) {}

HomeSource::~HomeSource() = default;

HomePanel HomeSource::Poll() {
  HomePanel panel;
  panel.store_path = store_.path();
  db::Store* store = store_.Get(panel.error);
  if (store == nullptr) return panel;
  // Each read is its own snapshot; a record landing between them shows next poll.
  Result<db::StoreInfo> info = store->Info();
  Result<std::vector<db::SweepRecord>> sweeps = store->ListSweeps(rows_);
  Result<std::vector<db::CaptureRecord>> captures = store->ListCaptures(rows_);
  Result<std::vector<db::BenchRun>> runs = store->ListBenchRuns(rows_);
  Result<std::vector<db::ClusterRecord>> clusters = store->ListClusters(rows_);
  if (store_.Failed(
          {info.status(), sweeps.status(), captures.status(), runs.status(), clusters.status()},
          panel.error)) {
    return panel;
  }
  panel.row_counts = std::move(info->row_counts);
  panel.sweeps = std::move(*sweeps);
  panel.captures = std::move(*captures);
  panel.runs = std::move(*runs);
  for (const db::ClusterRecord& cluster : *clusters) {
    panel.clusters.push_back(LineOf(*store, cluster));
  }
  return panel;
}

ClusterLine HomeSource::LineOf(db::Store& store, const db::ClusterRecord& cluster) {
  // A finished run changes only when --resume measures its failed links again,
  // which finishes it anew.
  if (auto known = finished_clusters_.find(cluster.id);
      known != finished_clusters_.end() &&
      known->second.record.finished_at == cluster.finished_at) {
    return known->second;
  }
  ClusterLine line;
  if (cluster.measurement == tuner::kModelMeasurement) {
    Result<tuner::ClusterModelData> data = tuner::ReadClusterModels(store, cluster.id);
    if (data.ok())
      line = ClusterLineOfModels(*data);
    else
      line.error = data.status().message();
  } else {
    Result<tuner::ClusterData> data = tuner::ReadClusterData(store, cluster.id);
    if (data.ok())
      line = ClusterLineOfSweeps(*data, tuner::AnalyzeCluster(data->input));
    else
      line.error = data.status().message();
  }
  line.record = cluster;
  if (!cluster.finished_at.empty() && line.error.empty()) finished_clusters_[cluster.id] = line;
  return line;
}

}  // namespace artune::dashboard
