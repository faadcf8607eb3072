// The sweep view's cluster panel: when the sweep shown measured one link of a
// cluster run (`artune sweep --mpi`), the cluster's host x host heatmap under its
// winner (artune/cluster/cluster_analysis.h), with this link marked and the outliers
// flagged. A pure function over the analysis, unit-tested without a store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_records.h"

namespace artune::dashboard {

struct ClusterHeatCell {
  bool linked = false;     // some link goes from this client host to this server host
  bool failed = false;     // ... and failed
  bool usable = false;     // measured with the panel's config
  bool outlier = false;    // an outlier link
  bool this_link = false;  // the sweep shown measured this link
  double objective = 0;
  int level = 0;  // 0..kHeatLevels-1 among usable cells (higher: better)
};

struct ClusterPanel {
  int64_t cluster_id = 0;
  std::string link;    // "a -> b": the link the sweep shown measured
  std::string config;  // "eager_threshold=4KiB": the heatmap's config
  bool under_winner = false;
  std::vector<std::string> hosts;                   // empty past tuner::kMatrixMaxHosts hosts
  size_t omitted_hosts = 0;                         // then: how many
  std::vector<std::vector<ClusterHeatCell>> cells;  // [client][server]
  size_t links = 0, failed = 0;
  std::vector<std::string> outliers;  // "b-d 16.0 MAD slower"
};

// nullopt when no link of `data` was measured by `sweep_id`.
std::optional<ClusterPanel> ClusterPanelForSweep(const tuner::ClusterData& data,
                                                 const tuner::ClusterAnalysis& analysis,
                                                 int64_t sweep_id);

// One cluster run as the home view lists it: for a swept run its winner, for a
// model run (`sweep --mpi --strategy model`) the cluster's predicted best, its
// margin over the default and the outlier links with the rule's figures.
struct ClusterLine {
  db::ClusterRecord record;
  size_t links = 0, usable = 0;       // usable: measured (swept) or with a model
  std::string best;                   // "eager_threshold=4KiB chunk_size=1MiB"; "" for none
  bool predicted = false;             // best is the models' prediction, not a measured winner
  double margin = 0;                  // model runs: the best's predicted saving over the default
  double best_ms = 0;                 // model runs: the best's predicted total over the links
  std::string none_reason;            // why there is no best
  std::vector<std::string> outliers;  // "q-s per-byte 20.0x median, 95 MAD"
  std::string error;                  // the run could not be read
};

ClusterLine ClusterLineOfSweeps(const tuner::ClusterData& data,
                                const tuner::ClusterAnalysis& analysis);
ClusterLine ClusterLineOfModels(const tuner::ClusterModelData& data);

}  // namespace artune::dashboard
