// The sweep view: progress and ETA, the best and the latest trial, and the
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
      return {"best beats the default beyond noise", Style::kGood};
    case db::Verdict::kWithinNoise:
      return {"within noise: best does not beat the default beyond noise", Style::kWarn};
    case db::Verdict::kDefaultIsBest:
      return {"the default is the best config", Style::kNormal};
    case db::Verdict::kNoValidTrial:
      return {"no valid trial", Style::kWarn};
  }
  return {std::string(db::VerdictName(verdict)), Style::kNormal};
}

constexpr Style kHeatStyles[kHeatLevels] = {Style::kHeat0, Style::kHeat1, Style::kHeat2,
                                            Style::kHeat3, Style::kHeat4};

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

  canvas.Put(3, 1, "best  ", Style::kHeader);
  canvas.Put(3, 7,
             s.best ? KeepEnd(TrialLine(*s.best), static_cast<size_t>(width - 8))
                    : std::string("none yet (no ok, validated trial)"),
             s.best ? Style::kGood : Style::kDim);
  canvas.Put(4, 1, s.finished ? "last  " : "latest", Style::kHeader);
  if (s.latest) {
    canvas.Put(4, 8, KeepEnd(TrialLine(*s.latest), static_cast<size_t>(width - 9)));
  }
  if (!s.finished) {
    canvas.Put(5, 8, "trial " + std::to_string(s.done + 1) + " is being measured", Style::kDim);
  } else if (s.verdict) {
    canvas.Put(5, 1, "verdict", Style::kHeader);
    const auto [text, style] = VerdictLine(*s.verdict);
    canvas.Put(5, 9, KeepEnd(text, static_cast<size_t>(std::max(0, width - 10))), style);
    // The end-of-sweep re-measurements the verdict rests on, one under the other:
    // the config it judged, then the default.
    int row = 6;
    if (s.best_remeasured || s.default_remeasured) canvas.Put(row, 1, "again ", Style::kHeader);
    if (s.best_remeasured) {
      canvas.Put(row++, 8,
                 KeepEnd("best    " + TrialLine(*s.best_remeasured),
                         static_cast<size_t>(std::max(0, width - 9))));
    }
    if (s.default_remeasured) {
      canvas.Put(row, 8,
                 KeepEnd("default " + TrialLine(*s.default_remeasured),
                         static_cast<size_t>(std::max(0, width - 9))));
    }
  }

  // Heatmap, one row lower when both re-measurements are shown.
  const int top = s.best_remeasured && s.default_remeasured && s.verdict ? 8 : 7;
  canvas.Put(top, 1,
             "objective: rows eager_threshold, columns chunk_size; * best, . none, x failed",
             Style::kHeader);
  constexpr int kLabelWidth = 9;
  constexpr int kCellWidth = 7;
  const int max_columns = (width - 1 - kLabelWidth) / kCellWidth;
  const int max_rows = canvas.height() - 1 - (top + 2);
  const int columns = std::min<int>(max_columns, static_cast<int>(s.chunk_values.size()));
  const int rows = std::min<int>(max_rows, static_cast<int>(s.eager_values.size()));
  if (columns < static_cast<int>(s.chunk_values.size()) ||
      rows < static_cast<int>(s.eager_values.size())) {
    canvas.Put(top + 1, width - 24, "(cut to fit the screen)", Style::kDim);
  }
  for (int c = 0; c < columns; ++c) {
    canvas.Put(top + 1, 1 + kLabelWidth + c * kCellWidth,
               AlignRight(s.chunk_values[c], kCellWidth - 1), Style::kHeader);
  }
  for (int r = 0; r < rows; ++r) {
    const int row = top + 2 + r;
    canvas.Put(row, 1, AlignRight(s.eager_values[r], kLabelWidth - 1), Style::kHeader);
    for (int c = 0; c < columns; ++c) {
      const HeatCell& cell = s.cells[r][c];
      const int left = 1 + kLabelWidth + c * kCellWidth;
      std::string text = !cell.measured ? "." : !cell.usable ? "x" : CellValue(cell.objective);
      if (cell.best) text = "*" + text;
      const Style style = !cell.usable ? Style::kDim
                          : cell.best  ? Style::kBest
                                       : kHeatStyles[cell.level];
      canvas.Put(row, left, AlignRight(text, kCellWidth - 1), style);
    }
  }
  if (!sweep.cluster) return;
  // Beside the sweep's heatmap when it fits, else below it, else one line.
  const int bottom = canvas.height() - 1;  // the key hints' row
  const int right = 1 + kLabelWidth + columns * kCellWidth + 2;
  if (DrawClusterPanel(*sweep.cluster, canvas, top + 1, right, width - right, bottom - top - 1)) {
    return;
  }
  const int below = top + 3 + rows;
  if (DrawClusterPanel(*sweep.cluster, canvas, below, 1, width - 2, bottom - below)) return;
  const std::string why =
      sweep.cluster->omitted_hosts > 0
          ? std::to_string(sweep.cluster->omitted_hosts) + " hosts, too many for a heatmap"
          : "its heatmap needs a larger terminal";
  canvas.Put(bottom - 1, 1,
             KeepEnd("cluster " + std::to_string(sweep.cluster->cluster_id) + ", link " +
                         sweep.cluster->link + ": " + why,
                     static_cast<size_t>(width - 2)),
             Style::kDim);
}

}  // namespace artune::dashboard
