// The terminal text of a model cluster run (`artune sweep --mpi --strategy model`,
// artune/cluster/cluster_model.h): each link's model and predicted best, the
// cluster's predicted best over the links' total, and the links whose models
// stand out. Printed at the run's end and by `artune results --cluster ID`; the
// JSON is the cluster room's (tuner::ClusterModelJson).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <utility>

#include "artune/cluster/cluster_model.h"

namespace artune::cli {

// `seconds`: the measuring time of the links measured by this run, by (client,
// server) rank; empty when read from the store afterwards.
void PrintClusterModelRun(const tuner::ClusterModelData& data,
                          const std::map<std::pair<uint32_t, uint32_t>, double>& seconds,
                          std::ostream& out);

}  // namespace artune::cli
