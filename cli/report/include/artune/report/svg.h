// Inline SVG charts for the HTML reports: a log2 size histogram coloured by the
// TF-gRPC-Bench size classes and a heatmap coloured by an objective. Each returns
// one <svg> element (with width and height attributes, so the page lays out before
// anything is measured) meant for HtmlDocument::AddMarkup. Hovering a bar or a cell
// shows its exact numbers through an SVG <title>, which browsers display as a
// tooltip without any script.
//
// Every label given here is escaped (html.h's EscapeHtml); callers pass plain text.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace artune::report {

// Fill colours shared by the charts, the legend and the tables' swatches.
inline constexpr const char* kEmptyColour = "#9e9e9e";   // 0-byte messages
inline constexpr const char* kSmallColour = "#4e79a7";   // [1 B, 1 KiB)
inline constexpr const char* kMediumColour = "#f28e2b";  // [1 KiB, 1 MiB)
inline constexpr const char* kLargeColour = "#e15759";   // [1 MiB, ...)

// The fill of a log2 bucket by the probes' size classes (probes/profile.h):
// the bucket boundaries coincide with the class boundaries, so a bucket lies in
// exactly one class.
const char* SizeClassColourOfBucket(uint64_t lower_bound);

// "0 B", "512 B", "4 KiB", "1 MiB": a power-of-two bucket bound, exact.
std::string FormatBucketBound(uint64_t lower_bound);

struct Log2HistogramChart {
  std::string title;                     // e.g. "message sizes"
  std::string unit;                      // what is counted, e.g. "messages"
  std::map<uint64_t, uint64_t> buckets;  // log2 lower bound -> count
};
// One bar per bucket from the smallest to the largest present (empty buckets in
// between are drawn as gaps, so the x axis stays logarithmic). Bar heights are
// linear in the count; the tallest bar fills the plot. No buckets: a small chart
// that says "no data".
std::string Log2HistogramSvg(const Log2HistogramChart& chart);

// A horizontal legend of the size classes (HTML, swatch + label).
std::string SizeClassLegendHtml();

struct HeatmapCell {
  std::optional<double> value;  // absent: no trial measured this cell
  std::string text;             // shown in the cell (e.g. the formatted value)
  std::string tooltip;          // shown on hover; empty: the text
};

struct Heatmap {
  std::string title;
  std::string row_axis;     // e.g. "eager_threshold"
  std::string column_axis;  // e.g. "chunk_size"
  std::string value_name;   // e.g. "p50 latency (µs)"
  std::vector<std::string> row_labels;
  std::vector<std::string> column_labels;
  std::vector<std::vector<HeatmapCell>> cells;  // [row][column]; short rows padded
  bool lower_is_better = true;
  // The best cell, outlined and starred; out-of-range positions are ignored.
  std::optional<std::pair<size_t, size_t>> marked;  // (row, column)
};
// Cells coloured on one ramp from the worst value (light) to the best (dark), the
// direction set by lower_is_better; a colour bar with the two end values; cells
// without a value hatched grey. An empty grid gives a chart that says "no data".
std::string HeatmapSvg(const Heatmap& heatmap);

struct LineSeries {
  std::string label;                              // the legend's text
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0; drawn in x order
  std::vector<std::string> tooltips;              // per point; missing: "label: x_name x B, y"
};

struct LogLogChart {
  std::string title;
  std::string x_name;  // e.g. "slice size": x values are byte counts
  std::string y_name;  // e.g. "µs per call"
  std::vector<LineSeries> series;
};
// One line per series with a dot per point (hover: its tooltip), x on a log2 axis
// labelled with byte sizes at powers of two, y on a log10 axis labelled at 1, 2, 5
// times the powers of ten, and a legend with each series' colour (ten colours, then
// the same ten dashed). Points with x or y not positive and finite are left out;
// no point at all: a chart that says "no data".
std::string LogLogChartSvg(const LogLogChart& chart);

// The ramp itself: t = 0 worst, 1 best (clamped); "#rrggbb".
std::string RampColour(double t);

// A number for a label: up to `significant` significant digits, no exponent for
// ordinary magnitudes, no trailing zeros ("12.3", "0.0456", "15300", "50").
std::string FormatNumber(double value, int significant = 3);

}  // namespace artune::report
