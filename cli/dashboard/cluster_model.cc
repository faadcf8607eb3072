#include "cluster_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "artune/db/trial_knob_text.h"
#include "sweep_model.h"

namespace artune::dashboard {
namespace {

// "node0-node1 4.2 MAD slower": a swept run's outlier link, as both views list it.
std::string OutlierWords(const tuner::ClusterData& data, const tuner::Outlier& outlier) {
  const db::ClusterLinkRecord& link = data.links[outlier.link];
  return link.client_host + "-" + link.server_host + " " +
         tuner::FormatDeviations(outlier.deviations) + " MAD " +
         (data.input.goal == tuner::ObjectiveGoal::kMax ? "lower" : "slower");
}

}  // namespace

ClusterLine ClusterLineOfSweeps(const tuner::ClusterData& data,
                                const tuner::ClusterAnalysis& analysis) {
  ClusterLine line;
  line.record = data.cluster;
  line.links = data.links.size();
  line.usable = analysis.usable_links;
  if (analysis.winner.winner) {
    line.best = db::TrialKnobText(analysis.winner.winner->key, " ");
  } else {
    line.none_reason = analysis.winner.reason;
  }
  for (const tuner::Outlier& outlier : analysis.outliers) {
    line.outliers.push_back(OutlierWords(data, outlier));
  }
  return line;
}

ClusterLine ClusterLineOfModels(const tuner::ClusterModelData& data) {
  const tuner::ClusterModelPrediction& prediction = data.prediction;
  ClusterLine line;
  line.record = data.cluster;
  line.links = data.links.size();
  line.usable = prediction.usable_links;
  line.predicted = true;
  if (prediction.ranked.empty()) {
    line.none_reason = "no link has a model";
  } else {
    line.best = db::TrialKnobText(prediction.ranked.front().key, " ");
    line.best_ms = prediction.ranked.front().seconds * 1e3;
    line.margin = prediction.margin;
  }
  for (const tuner::ModelOutlier& outlier : prediction.outliers) {
    const db::ClusterLinkRecord& link = data.links[outlier.link];
    char figures[96];
    std::snprintf(figures, sizeof figures, " %.1fx median, ", outlier.ratio);
    line.outliers.push_back(link.client_host + "-" + link.server_host + " " + outlier.term +
                            figures + tuner::FormatDeviations(outlier.deviations) + " MAD");
  }
  return line;
}

std::optional<ClusterPanel> ClusterPanelForSweep(const tuner::ClusterData& data,
                                                 const tuner::ClusterAnalysis& analysis,
                                                 int64_t sweep_id) {
  const auto shown =
      std::find_if(data.links.begin(), data.links.end(), [&](const db::ClusterLinkRecord& link) {
        return link.sweep_id == sweep_id && sweep_id != 0;
      });
  if (shown == data.links.end()) return std::nullopt;
  const tuner::HostMatrix& matrix = analysis.matrix;
  ClusterPanel panel;
  panel.cluster_id = data.cluster.id;
  panel.link = shown->client_host + " -> " + shown->server_host;
  const auto knobs = db::ParseTrialKnobKey(matrix.config_key);
  if (knobs.ok()) {
    for (const auto& [name, value] : *knobs) {
      panel.config += (panel.config.empty() ? "" : " ") + name + "=" + value;
    }
  } else {
    panel.config = matrix.config_key;
  }
  panel.under_winner = matrix.is_winner;
  panel.hosts = matrix.hosts;
  panel.omitted_hosts = matrix.omitted_hosts;
  panel.links = data.links.size();
  panel.failed = analysis.failed_links;

  const auto [best, worst] = tuner::MatrixRange(matrix, data.input.goal);
  const auto index_of = [&](const std::string& host) {
    return static_cast<size_t>(std::find(matrix.hosts.begin(), matrix.hosts.end(), host) -
                               matrix.hosts.begin());
  };
  const size_t shown_row = index_of(shown->client_host);
  const size_t shown_column = index_of(shown->server_host);
  for (size_t r = 0; r < matrix.hosts.size(); ++r) {
    std::vector<ClusterHeatCell> row;
    for (size_t c = 0; c < matrix.hosts.size(); ++c) {
      const tuner::HostMatrix::Cell& from = matrix.cells[r][c];
      ClusterHeatCell cell;
      cell.linked = from.links > 0;
      cell.failed = from.failed;
      cell.outlier = from.outlier;
      cell.this_link = r == shown_row && c == shown_column;
      if (from.value && best && worst) {
        cell.usable = true;
        cell.objective = *from.value;
        const double span = *worst - *best;
        const double t = span == 0 ? 1 : (*worst - *from.value) / span;  // 1: best
        cell.level =
            std::clamp(static_cast<int>(std::lround(t * (kHeatLevels - 1))), 0, kHeatLevels - 1);
      }
      row.push_back(cell);
    }
    panel.cells.push_back(std::move(row));
  }
  for (const tuner::Outlier& outlier : analysis.outliers) {
    panel.outliers.push_back(OutlierWords(data, outlier));
  }
  return panel;
}

}  // namespace artune::dashboard
