// The words and the terminal heatmap of a cluster run, shared by `artune results
// --cluster` and `artune apply config --cluster`.
#pragma once

#include <cstddef>
#include <string>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_records.h"
#include "artune/db/store.h"

namespace artune::cli {

// "a ↔ b": the two hosts of a link.
std::string LinkHosts(const db::ClusterLinkRecord& link);

// "a (mlx5_0)": a link end's host and device.
std::string LinkEndText(const std::string& host, const std::string& device);

// The worse direction of the objective: "slower" for a minimised one, "lower" for a
// maximised one (a throughput).
std::string WorseWord(const tuner::ClusterData& data);

// "look at the link a ↔ b: 3.8 MAD slower than the median under the winner
// (12.0 against 8.05)".
std::string OutlierSentence(const tuner::ClusterData& data, const tuner::ClusterAnalysis& analysis,
                            const tuner::Outlier& outlier);

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
