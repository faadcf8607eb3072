// The terminal text of a cluster run for `artune results --cluster`: a link end, and
// the heatmap. The sentences its JSON carries too are the cluster room's
// (artune/cluster/cluster_summary.h).
#pragma once

#include <cstddef>
#include <string>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_records.h"
#include "artune/db/store.h"

namespace artune::cli {

// "a (mlx5_0)": a link end's host and device.
std::string LinkEndText(const std::string& host, const std::string& device);

// Whether stdout takes ANSI colour: a terminal whose TERM is set and not "dumb",
// and NO_COLOR (https://no-color.org) unset.
bool StdoutTakesColour();

// The host x host grid of the objective under the analysis's matrix config, with a
// title line and a legend: cells shaded from best to worst with ANSI backgrounds
// when `colour`, plain numbers otherwise; "!" marks an outlier link, FAIL a failed
// one, "-" a pair of hosts without a link. "" when there is no config to show; a
// sentence instead of a grid past tuner::kMatrixMaxHosts hosts.
std::string ClusterHeatmapText(const tuner::ClusterData& data,
                               const tuner::ClusterAnalysis& analysis, bool colour);

}  // namespace artune::cli
