// The watch view: `artune watch`'s decisions, newest first, each with the config
// change it made or weighed, the predicted and the measured saving and the reason,
// so a change to a running job can be traced to its evidence.
#include <algorithm>
#include <cstdio>

#include "view_parts.h"
#include "views.h"
#include "watch_model.h"

namespace artune::dashboard {
namespace {

// `text` cut to `width` columns keeping the start (reasons say the most first).
std::string KeepStart(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  if (width <= 2) return text.substr(0, width);
  return text.substr(0, width - 2) + "..";
}

// One event in two or three rows; returns the row after it.
int DrawEvent(const WatchEventLine& line, Canvas& canvas, int row) {
  const size_t width = static_cast<size_t>(canvas.width());
  char text[128];
  std::snprintf(text, sizeof text, "%5lld  %-14s  ", static_cast<long long>(line.id),
                line.time.c_str());
  int col = canvas.Put(row, 0, text);
  col = canvas.Put(row, col, AlignLeft(line.action, 10), line.action_style);
  col = canvas.Put(row, col, AlignRight(line.predicted, 9) + "  ");
  col = canvas.Put(row, col, AlignRight(line.measured, 8), line.measured_style);
  const size_t used = static_cast<size_t>(col) + 2;
  if (used < width) canvas.Put(row, col + 2, KeepEnd(line.servers, width - used), Style::kDim);
  ++row;
  if (!line.change.empty()) canvas.Put(row++, 7, KeepStart(line.change, width - 8));
  canvas.Put(row++, 7, KeepStart(line.reason, width - 8), Style::kDim);
  return row;
}

}  // namespace

void DrawWatchView(const WatchPanel& watch, Canvas& canvas) {
  const size_t width = static_cast<size_t>(canvas.width());
  canvas.Put(1, 1, KeepEnd("store " + watch.store_path, width - 2), Style::kHeader);
  int row = 2;
  if (!watch.error.empty()) canvas.Put(row++, 1, KeepEnd(watch.error, width - 2), Style::kWarn);
  const int last_row = canvas.height() - 2;  // the key hints below
  std::string title = "Watch decisions (" + std::to_string(watch.total) + ")";
  canvas.Put(row++, 1, title, Style::kHeader);
  if (watch.events.empty()) {
    if (watch.error.empty()) {
      canvas.Put(row++, 3,
                 "none yet: artune watch run --server RELAY --ab-peer SERVE keeps a job tuned",
                 Style::kDim);
    }
    return;
  }
  canvas.Put(row++, 0, "   ID  TIME (UTC)      ACTION    PREDICTED  MEASURED  SERVER",
             Style::kHeader);
  size_t shown = 0;
  for (const db::WatchEventRecord& event : watch.events) {
    const WatchEventLine line = DescribeWatchEvent(event);
    const int rows = line.change.empty() ? 2 : 3;
    if (row + rows - 1 > last_row) break;
    row = DrawEvent(line, canvas, row);
    ++shown;
  }
  if (static_cast<int64_t>(shown) < watch.total) title += ", newest " + std::to_string(shown);
  // The title again, now that the rows that fit are known.
  const int title_row = watch.error.empty() ? 2 : 3;
  canvas.Put(title_row, 1, title, Style::kHeader);
  canvas.Put(title_row, static_cast<int>(title.size()) + 3,
             "saving: of the change's pass, predicted / on the live A/B", Style::kDim);
}

}  // namespace artune::dashboard
