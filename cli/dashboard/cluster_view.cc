// The cluster panel of the sweep view: the host x host heatmap of the cluster run
// whose link the sweep measured, under the cluster's winner.
#include <algorithm>
#include <cstdio>

#include "view_parts.h"
#include "views.h"

namespace artune::dashboard {
namespace {

constexpr int kLabelWidth = 7;
constexpr int kCellWidth = 7;
constexpr Style kHeatStyles[kHeatLevels] = {Style::kHeat0, Style::kHeat1, Style::kHeat2,
                                            Style::kHeat3, Style::kHeat4};

// Host names differ at the start ("node01.example.org"): keep the start.
std::string HostLabel(const std::string& host, size_t width) { return host.substr(0, width); }

std::string CellText(const ClusterHeatCell& cell) {
  if (cell.usable) {
    char text[32];
    std::snprintf(text, sizeof text, cell.objective >= 100 ? "%.0f" : "%.2f", cell.objective);
    return std::string(text) + (cell.outlier ? "!" : "");
  }
  if (cell.failed) return "x";
  return cell.linked ? "?" : ".";
}

}  // namespace

bool DrawClusterPanel(const ClusterPanel& panel, Canvas& canvas, int top, int left, int width,
                      int height) {
  const int hosts = static_cast<int>(panel.hosts.size());
  const int needed_width = kLabelWidth + hosts * kCellWidth;
  const int needed_height = hosts + 3;  // title, column labels, rows, outliers
  if (width < needed_width || height < needed_height || hosts == 0) return false;
  const std::string title = "cluster " + std::to_string(panel.cluster_id) + ", link " + panel.link +
                            "; " + (panel.under_winner ? "winner " : "default ") + panel.config;
  canvas.Put(top, left, KeepEnd(title, static_cast<size_t>(width)), Style::kHeader);
  for (int c = 0; c < hosts; ++c) {
    canvas.Put(top + 1, left + kLabelWidth + c * kCellWidth,
               AlignRight(HostLabel(panel.hosts[c], kCellWidth - 1), kCellWidth - 1),
               Style::kHeader);
  }
  for (int r = 0; r < hosts; ++r) {
    const int row = top + 2 + r;
    canvas.Put(row, left, HostLabel(panel.hosts[r], kLabelWidth - 1), Style::kHeader);
    for (int c = 0; c < hosts; ++c) {
      const ClusterHeatCell& cell = panel.cells[r][c];
      std::string text = CellText(cell);
      if (cell.this_link) text = ">" + text;
      const Style style = cell.this_link ? Style::kBest
                          : cell.outlier ? Style::kError
                          : cell.usable  ? kHeatStyles[cell.level]
                                         : Style::kDim;
      canvas.Put(row, left + kLabelWidth + c * kCellWidth, AlignRight(text, kCellWidth - 1), style);
    }
  }
  std::string note = "> this link, ! outlier, x failed";
  if (!panel.outliers.empty()) {
    note = "! " + panel.outliers.front() +
           (panel.outliers.size() > 1 ? " (+" + std::to_string(panel.outliers.size() - 1) + " more)"
                                      : "");
  }
  canvas.Put(top + 2 + hosts, left, KeepEnd(note, static_cast<size_t>(width)),
             panel.outliers.empty() ? Style::kDim : Style::kWarn);
  return true;
}

}  // namespace artune::dashboard
