// The traffic view: per-method table, then the selected method's message-size
// histogram beside the iovec-size histogram of all send calls.
#include <algorithm>
#include <cstdio>

#include "artune/probes/profile_output.h"
#include "view_parts.h"
#include "views.h"

namespace artune::dashboard {
namespace {

Buckets FromLog2(const probes::Log2Histogram& histogram) {
  return Buckets(histogram.buckets.begin(), histogram.buckets.end());
}

std::string ClassMix(const probes::SizeClasses& classes) {
  const uint64_t total = classes.small.count + classes.medium.count + classes.large.count;
  if (total == 0) return "-";
  auto percent = [total](uint64_t count) {
    return std::to_string((count * 100 + total / 2) / total);
  };
  return percent(classes.small.count) + "/" + percent(classes.medium.count) + "/" +
         percent(classes.large.count);
}

Style StateStyle(SourceState state) {
  switch (state) {
    case SourceState::kRunning:
      return Style::kGood;
    case SourceState::kFailed:
      return Style::kError;
    case SourceState::kFinished:
      return Style::kWarn;
    default:
      return Style::kDim;
  }
}

}  // namespace

void DrawTrafficView(const TrafficSnapshot& traffic, size_t selected_method, Canvas& canvas) {
  const int width = canvas.width();
  if (traffic.state == SourceState::kNone) {
    canvas.Put(2, 2, "Traffic", Style::kHeader);
    canvas.Put(4, 2, "No probe: start the dashboard with a probe source, e.g.", Style::kDim);
    canvas.Put(5, 4, "artune dashboard --exec -- CMD ARGS");
    canvas.Put(6, 4, "artune dashboard --pcap --iface lo --port 50051");
    canvas.Put(7, 4, "artune dashboard --ebpf --pid PID --decode");
    return;
  }
  // Row 1: the source and its counters.
  int col = canvas.Put(1, 1, "probe " + KeepEnd(traffic.source, 30), Style::kHeader) + 2;
  col = canvas.Put(1, col, SourceStateName(traffic.state), StateStyle(traffic.state)) + 2;
  char line[160];
  std::snprintf(line, sizeof line, "%s  msgs %s  sends %s  lost %s  errors %s",
                FormatSeconds(traffic.elapsed_s).c_str(),
                FormatCount(static_cast<double>(traffic.messages)).c_str(),
                FormatCount(static_cast<double>(traffic.send_calls)).c_str(),
                FormatCount(static_cast<double>(traffic.counters.events_lost)).c_str(),
                FormatCount(static_cast<double>(traffic.decode_errors)).c_str());
  canvas.Put(1, col, line);
  if (!traffic.message.empty()) {
    canvas.Put(2, 1, KeepEnd(traffic.message, static_cast<size_t>(width - 2)),
               traffic.state == SourceState::kFailed ? Style::kError : Style::kWarn);
  }

  // The method table: as many rows as leave room for histograms of 8 rows.
  constexpr int kNumbersWidth = 9 + 12 + 9 + 9 + 9;  // RPC/s bytes/s msgs S/M/L% scheme
  const int method_width = width - 3 - kNumbersWidth;
  const int table_top = 3;
  const int histogram_height = std::max(8, canvas.height() / 2 - 1);
  const int max_rows = std::max(1, canvas.height() - 1 - table_top - 2 - histogram_height);
  std::snprintf(line, sizeof line, "%s%9s%12s%9s%9s%9s",
                AlignLeft("  METHOD", static_cast<size_t>(method_width + 2)).c_str(), "RPC/s",
                "bytes/s", "msgs", "S/M/L %", "scheme");
  canvas.Put(table_top, 0, line, Style::kHeader);
  if (traffic.methods.empty()) {
    canvas.Put(table_top + 1, 2, "no gRPC messages decoded yet", Style::kDim);
  }
  const size_t selected = std::min(selected_method, traffic.methods.size() - 1);
  // Scroll so the selected method is visible.
  const size_t first =
      selected >= static_cast<size_t>(max_rows) ? selected - static_cast<size_t>(max_rows) + 1 : 0;
  for (size_t i = first; i < traffic.methods.size() && i < first + static_cast<size_t>(max_rows);
       ++i) {
    const MethodTraffic& method = traffic.methods[i];
    const int row = table_top + 1 + static_cast<int>(i - first);
    const bool is_selected = i == selected;
    std::snprintf(line, sizeof line, "%s %s%9s%12s%9s%9s%9s", is_selected ? ">" : " ",
                  AlignLeft(KeepEnd(method.method, static_cast<size_t>(method_width)),
                            static_cast<size_t>(method_width + 1))
                      .c_str(),
                  FormatCount(method.rpcs_per_s).c_str(),
                  FormatBytesPerSecond(method.bytes_per_s).c_str(),
                  FormatCount(static_cast<double>(method.requests + method.responses)).c_str(),
                  ClassMix(method.classes).c_str(), probes::PayloadSchemeName(method.scheme));
    canvas.Put(row, 0, line, is_selected ? Style::kHeader : Style::kNormal);
  }
  if (traffic.methods.size() > static_cast<size_t>(max_rows)) {
    canvas.Put(table_top + 1 + max_rows, 2,
               std::to_string(traffic.methods.size()) + " methods; j/k scrolls", Style::kDim);
  }

  const int histogram_top = canvas.height() - 1 - histogram_height;
  const int half = (width - 3) / 2;
  if (!traffic.methods.empty()) {
    const MethodTraffic& method = traffic.methods[selected];
    DrawHistogram(canvas, histogram_top, 1, half, histogram_height,
                  "message sizes: " + KeepEnd(method.method, static_cast<size_t>(half - 16)),
                  FromLog2(method.message_sizes));
  } else {
    DrawHistogram(canvas, histogram_top, 1, half, histogram_height, "message sizes", {});
  }
  DrawHistogram(canvas, histogram_top, 2 + half, half, histogram_height,
                "iovec sizes (all send calls)", FromLog2(traffic.send_iovec_sizes));
}

}  // namespace artune::dashboard
