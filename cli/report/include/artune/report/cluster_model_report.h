// The HTML report of one stored model cluster run (`artune sweep --mpi --strategy
// model`, `artune report --cluster ID` when its measurement is "model"): what was
// run, the cluster's predicted best against the default over every link's model,
// a host x host heatmap of each link's predicted pass time under that best with the
// outlier links marked, the outliers with the rule's figures, and every link with
// its model (per-call and per-byte cost), its predicted best and predicted times.
// The predictions are tuner::ReadClusterModels's, the same `artune results
// --cluster ID` prints.
#pragma once

#include <string>

#include "artune/cluster/cluster_model.h"

namespace artune::report {

// Every string from the records is escaped. Returns the whole document (html.h).
// Pure; thread-safe.
std::string ClusterModelReportHtml(const tuner::ClusterModelData& data);

}  // namespace artune::report
