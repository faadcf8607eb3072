// A stored cluster run (`artune sweep --mpi`) read into the analysis's input: the
// cluster, its links, each link's sweep, and per link the objective of every
// config its sweep validated. Shared by `artune results --cluster`, `artune report`,
// `artune apply config --cluster` and the dashboard, so all see one reading.
//
// Threading: as db::Store (one thread at a time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "artune/cluster/cluster_analysis.h"
#include "artune/db/store.h"
#include "artune/status.h"

namespace artune::tuner {

struct ClusterData {
  db::ClusterRecord cluster;
  std::vector<db::ClusterLinkRecord> links;            // by round, then pair
  std::vector<std::optional<db::SweepRecord>> sweeps;  // per link; nullopt: no sweep (failed)
  // The links' sweeps' objective and goal ("min" | "max"); "" when no link has a
  // sweep.
  std::string objective;
  std::string goal;
  // links[i] is input.links[i]; default_key is the sweeps' default_knobs.
  ClusterInput input;
};

// Reads cluster `id` and every link's sweep and trials. A link counts a config's
// objective when its trial is ok and validated; the link's `chosen` config is its
// sweep's verdict. Errors: kNotFound (no such cluster, or a link naming a sweep the
// store lacks), kCorruption (links whose sweeps have different objectives or goals:
// their values cannot be compared), the store's errors.
Result<ClusterData> ReadClusterData(db::Store& store, int64_t cluster_id,
                                    ClusterGoal cluster_goal = ClusterGoal::kWorstLink);

// The cluster, if any, one of whose links was measured by sweep `sweep_id`; scans the
// clusters newest first (one query per cluster). nullopt when none.
Result<std::optional<int64_t>> FindClusterOfSweep(db::Store& store, int64_t sweep_id);

}  // namespace artune::tuner
