// The HTML report of one stored cluster run (`artune report --cluster ID`): what
// was run, the cluster's winner against the default, a host x host heatmap of the
// objective under the winner with the outlier links marked, the outliers in words,
// the host groups, and every link with its best config (its sweep's own report is
// `artune report --sweep ID`).
#pragma once

#include <string>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_records.h"

namespace artune::report {

// `analysis` is tuner::AnalyzeCluster(data.input). Every string from the records is
// escaped. Returns the whole document (html.h). Pure; thread-safe.
std::string ClusterReportHtml(const tuner::ClusterData& data,
                              const tuner::ClusterAnalysis& analysis);

// The heatmap alone (an <svg>), for the report: client hosts as rows, server hosts
// as columns, darker is better, outlier cells starred in their tooltip and text.
std::string ClusterHeatmapSvg(const tuner::ClusterData& data,
                              const tuner::ClusterAnalysis& analysis);

}  // namespace artune::report
