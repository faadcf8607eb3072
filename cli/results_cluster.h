// `artune results --clusters`: the stored cluster runs, newest first.
// `artune results --cluster ID [--goal worst-link|geomean]`: one run's links (the
// best config of each against the default), the cluster's winner, the host x host
// heatmap under it, the outlier links, the host groups and the failed links.
#pragma once

#include <cstdint>

#include "artune/cluster/cluster_analysis.h"
#include "artune/status.h"
#include "command.h"

namespace artune::cli {

Status ListClusters(int limit, bool json, const Context& context);
Status ShowCluster(int64_t cluster_id, tuner::ClusterGoal goal, bool json, const Context& context);

}  // namespace artune::cli
