#include "cluster_model.h"

#include <algorithm>
#include <cmath>

#include "sweep_model.h"

namespace artune::dashboard {

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
    const db::ClusterLinkRecord& link = data.links[outlier.link];
    panel.outliers.push_back(link.client_host + "-" + link.server_host + " " +
                             tuner::FormatDeviations(outlier.deviations) + " MAD " +
                             (data.input.goal == tuner::ObjectiveGoal::kMax ? "lower" : "slower"));
  }
  return panel;
}

}  // namespace artune::dashboard
