// The sweep view: progress and ETA, the chosen config and the latest trial, and the
// heatmap of the objective over eager_threshold (rows) x chunk_size (columns);
// for a sweep that measured a cluster's link, the cluster's host x host heatmap
// beside or below it (cluster_view.cc).
#include <algorithm>
#include <cstdio>

#include "view_parts.h"
#include "views.h"

namespace artune::dashboard {
namespace {

std::string KnobText(const std::map<std::string, std::string>& knobs) {
  std::string text;
  for (const auto& [name, value] : knobs) {
    if (!text.empty()) text += ' ';
    text += name + "=" + value;
  }
  return text;
}

// Short text of an objective value for a heatmap cell of 7 columns.
std::string CellValue(double value) {
  char text[32];
  if (value >= 100000) {
    std::snprintf(text, sizeof text, "%.3g", value);
  } else if (value >= 100) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.2f", value);
  }
  return text;
}

std::string TrialLine(const SweepTrial& trial) {
  char text[96];
  if (trial.status == db::TrialStatus::kOk) {
    std::snprintf(text, sizeof text, "  %.4g [%.4g, %.4g]", trial.objective, trial.ci_low,
                  trial.ci_high);
  } else {
    std::snprintf(text, sizeof text, "  %s%s",
                  std::string(db::TrialStatusName(trial.status)).c_str(),
                  trial.validated ? "" : " (not validated)");
  }
  return KnobText(trial.knobs) + text;
}

// The stored verdict in a few words, and how to colour it.
std::pair<std::string, Style> VerdictLine(db::Verdict verdict) {
  switch (verdict) {
    case db::Verdict::kBeatsDefault:
      return {"the chosen config beats the default beyond noise", Style::kGood};
    case db::Verdict::kWithinNoise:
      return {"within noise: the chosen config does not beat the default beyond noise",
              Style::kWarn};
    case db::Verdict::kDefaultIsBest:
      return {"the default is the best config", Style::kNormal};
    case db::Verdict::kNoValidTrial:
      return {"no valid trial", Style::kWarn};
  }
  return {std::string(db::VerdictName(verdict)), Style::kNormal};
}

constexpr Style kHeatStyles[kHeatLevels] = {Style::kHeat0, Style::kHeat1, Style::kHeat2,
                                            Style::kHeat3, Style::kHeat4};

// The heatmap's columns: the row labels, then one cell per chunk_size value.
constexpr int kLabelWidth = 9;
constexpr int kCellWidth = 7;

// Rows 1 and 2: what the sweep is, and how far it got.
void DrawSweepProgress(const SweepSummary& s, Canvas& canvas) {
  const int width = canvas.width();
  char line[256];
  std::snprintf(line, sizeof line, "sweep %lld  %s (%s)  %s  %s  %s", static_cast<long long>(s.id),
                s.objective.c_str(), s.goal.c_str(), s.strategy.c_str(), s.workload.c_str(),
                s.peer.c_str());
  canvas.Put(1, 1, KeepEnd(line, static_cast<size_t>(width - 2)), Style::kHeader);

  // Progress bar and ETA.
  int col = canvas.Put(2, 1, s.finished ? "finished" : "running",
                       s.finished ? Style::kGood : Style::kWarn) +
            1;
  const int bar_width = 24;
  if (s.planned && *s.planned > 0) {
    const int filled =
        static_cast<int>(std::min<uint64_t>(s.done, *s.planned) * bar_width / *s.planned);
    col = canvas.Put(2, col, "[");
    canvas.Fill(2, col, filled, '#', Style::kGood);
    canvas.Fill(2, col + filled, bar_width - filled, '.', Style::kDim);
    col = canvas.Put(2, col + bar_width, "] ");
    std::snprintf(line, sizeof line, "%llu/%llu trials", static_cast<unsigned long long>(s.done),
                  static_cast<unsigned long long>(*s.planned));
  } else {
    std::snprintf(line, sizeof line, "%llu trials", static_cast<unsigned long long>(s.done));
  }
  col = canvas.Put(2, col, line) + 2;
  std::snprintf(line, sizeof line, "ok %llu  measured %s", static_cast<unsigned long long>(s.ok),
                FormatSeconds(s.trial_seconds).c_str());
  col = canvas.Put(2, col, line) + 2;
  if (s.eta_s) canvas.Put(2, col, "ETA " + FormatSeconds(*s.eta_s), Style::kHeader);
}

// From row 3: the chosen config (what `artune apply config --sweep` writes), the
// search's best trial when the final round chose another, the latest trial, and
// once finished the verdict with the re-measurements it rests on. Returns the
// first row below them.
int DrawSweepTrials(const SweepSummary& s, Canvas& canvas) {
  const int width = canvas.width();
  const auto fit = [&](const std::string& text, int left) {
    return KeepEnd(text, static_cast<size_t>(std::max(0, width - left - 1)));
  };
  int row = 3;
  canvas.Put(row, 1, "chosen", Style::kHeader);
  canvas.Put(row++, 8,
             s.chosen ? fit(TrialLine(*s.chosen), 8) : "none yet (no ok, validated trial)",
             s.chosen ? Style::kGood : Style::kDim);
  if (s.best && s.chosen && KnobText(s.best->knobs) != KnobText(s.chosen->knobs)) {
    canvas.Put(row, 1, "search's best", Style::kHeader);
    canvas.Put(row++, 15, fit(TrialLine(*s.best) + "  (not chosen)", 15));
  }
  canvas.Put(row, 1, s.finished ? "last  " : "latest", Style::kHeader);
  if (s.latest) canvas.Put(row, 8, fit(TrialLine(*s.latest), 8));
  ++row;
  if (!s.finished) {
    canvas.Put(row++, 8, "trial " + std::to_string(s.done + 1) + " is being measured", Style::kDim);
    return row;
  }
  if (!s.verdict) return row;
  canvas.Put(row, 1, "verdict", Style::kHeader);
  const auto [text, style] = VerdictLine(*s.verdict);
  canvas.Put(row++, 9, fit(text, 9), style);
  // The end-of-sweep re-measurements the verdict rests on, one under the other:
  // the chosen config, then the default.
  if (s.best_remeasured || s.default_remeasured) canvas.Put(row, 1, "again ", Style::kHeader);
  if (s.best_remeasured) canvas.Put(row++, 8, fit("chosen  " + TrialLine(*s.best_remeasured), 8));
  if (s.default_remeasured) {
    canvas.Put(row++, 8, fit("default " + TrialLine(*s.default_remeasured), 8));
  }
  return row;
}

struct HeatmapExtent {
  int columns = 0;  // drawn (the screen may cut some)
  int rows = 0;
};

// The heatmap of the objective from row `top`, the chosen config's cell starred.
HeatmapExtent DrawSweepHeatmap(const SweepSummary& s, Canvas& canvas, int top) {
  const int width = canvas.width();
  canvas.Put(top, 1,
             "objective: rows eager_threshold, columns chunk_size; * chosen, . none, x failed",
             Style::kHeader);
  const int max_columns = (width - 1 - kLabelWidth) / kCellWidth;
  const int max_rows = canvas.height() - 1 - (top + 2);
  HeatmapExtent extent;
  extent.columns = std::min<int>(max_columns, static_cast<int>(s.chunk_values.size()));
  extent.rows = std::min<int>(max_rows, static_cast<int>(s.eager_values.size()));
  if (extent.columns < static_cast<int>(s.chunk_values.size()) ||
      extent.rows < static_cast<int>(s.eager_values.size())) {
    canvas.Put(top + 1, width - 24, "(cut to fit the screen)", Style::kDim);
  }
  for (int c = 0; c < extent.columns; ++c) {
    canvas.Put(top + 1, 1 + kLabelWidth + c * kCellWidth,
               AlignRight(s.chunk_values[c], kCellWidth - 1), Style::kHeader);
  }
  for (int r = 0; r < extent.rows; ++r) {
    const int row = top + 2 + r;
    canvas.Put(row, 1, AlignRight(s.eager_values[r], kLabelWidth - 1), Style::kHeader);
    for (int c = 0; c < extent.columns; ++c) {
      const HeatCell& cell = s.cells[r][c];
      const int left = 1 + kLabelWidth + c * kCellWidth;
      std::string text = !cell.measured ? "." : !cell.usable ? "x" : CellValue(cell.objective);
      if (cell.chosen) text = "*" + text;
      const Style style = !cell.usable  ? Style::kDim
                          : cell.chosen ? Style::kBest
                                        : kHeatStyles[cell.level];
      canvas.Put(row, left, AlignRight(text, kCellWidth - 1), style);
    }
  }
  return extent;
}

// The cluster's heatmap beside the sweep's when it fits, else below it, else one line.
void DrawClusterBesideOrBelow(const ClusterPanel& cluster, Canvas& canvas, int top,
                              const HeatmapExtent& heatmap) {
  const int width = canvas.width();
  const int bottom = canvas.height() - 1;  // the key hints' row
  const int right = 1 + kLabelWidth + heatmap.columns * kCellWidth + 2;
  if (DrawClusterPanel(cluster, canvas, top + 1, right, width - right, bottom - top - 1)) return;
  const int below = top + 3 + heatmap.rows;
  if (DrawClusterPanel(cluster, canvas, below, 1, width - 2, bottom - below)) return;
  const std::string why = cluster.omitted_hosts > 0 ? std::to_string(cluster.omitted_hosts) +
                                                          " hosts, too many for a heatmap"
                                                    : "its heatmap needs a larger terminal";
  canvas.Put(bottom - 1, 1,
             KeepEnd("cluster " + std::to_string(cluster.cluster_id) + ", link " + cluster.link +
                         ": " + why,
                     static_cast<size_t>(width - 2)),
             Style::kDim);
}

}  // namespace

void DrawSweepView(const SweepPanel& sweep, Canvas& canvas) {
  const int width = canvas.width();
  if (!sweep.configured) {
    canvas.Put(2, 2, "Sweep", Style::kHeader);
    canvas.Put(4, 2, "No sweep: show one from the store with --sweep ID (or --sweep latest)",
               Style::kDim);
    return;
  }
  if (!sweep.summary) {
    canvas.Put(1, 1, sweep.source, Style::kHeader);
    canvas.Put(3, 2,
               KeepEnd(sweep.error.empty() ? "reading the store" : sweep.error,
                       static_cast<size_t>(width - 4)),
               sweep.error.empty() ? Style::kDim : Style::kWarn);
    return;
  }
  const SweepSummary& s = *sweep.summary;
  DrawSweepProgress(s, canvas);
  // The heatmap starts at row 7 at the least, lower when more lines are shown above.
  const int top = std::max(DrawSweepTrials(s, canvas), 7);
  const HeatmapExtent heatmap = DrawSweepHeatmap(s, canvas, top);
  if (sweep.cluster) DrawClusterBesideOrBelow(*sweep.cluster, canvas, top, heatmap);
}

}  // namespace artune::dashboard
