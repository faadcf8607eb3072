#include "artune/report/svg.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "artune/base/number_text.h"
#include "artune/probes/profile.h"
#include "artune/report/html.h"

namespace artune::report {
namespace {

// Coordinates are written with one decimal: enough for a screen, stable in tests.
std::string Coord(double value) { return Printf("%.1f", value); }

std::string Text(double x, double y, std::string_view anchor, std::string_view text,
                 std::string_view extra = "") {
  std::string out = "<text x=\"" + Coord(x) + "\" y=\"" + Coord(y) + "\" text-anchor=\"" +
                    std::string(anchor) + "\"";
  if (!extra.empty()) out += " " + std::string(extra);
  out += ">" + EscapeHtml(text) + "</text>";
  return out;
}

std::string SvgOpen(double width, double height, std::string_view label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Coord(width) + "\" height=\"" +
         Coord(height) + "\" viewBox=\"0 0 " + Coord(width) + " " + Coord(height) +
         "\" role=\"img\" aria-label=\"" + EscapeHtml(label) + "\" font-size=\"11\">";
}

std::string NoDataSvg(const std::string& title) {
  std::string out = SvgOpen(240, 60, title);
  out += Text(8, 18, "start", title, "font-weight=\"bold\"");
  out += Text(120, 44, "middle", "no data", "fill=\"#707070\"");
  out += "</svg>";
  return out;
}

const char* ClassNameOfBucket(uint64_t lower_bound) {
  switch (probes::ClassifySize(lower_bound)) {
    case probes::SizeClass::kEmpty:
      return "Empty";
    case probes::SizeClass::kSmall:
      return "Small";
    case probes::SizeClass::kMedium:
      return "Medium";
    case probes::SizeClass::kLarge:
      return "Large";
  }
  return "";
}

// Index on the log2 axis: bucket 0 (the 0-byte bucket) first, then 1 B, 2 B, ...
int AxisIndex(uint64_t lower_bound) {
  return lower_bound == 0 ? 0 : 1 + std::countr_zero(std::bit_floor(lower_bound));
}
uint64_t BoundOfIndex(int index) { return index == 0 ? 0 : uint64_t{1} << (index - 1); }

}  // namespace

const char* SizeClassColourOfBucket(uint64_t lower_bound) {
  switch (probes::ClassifySize(lower_bound)) {
    case probes::SizeClass::kEmpty:
      return kEmptyColour;
    case probes::SizeClass::kSmall:
      return kSmallColour;
    case probes::SizeClass::kMedium:
      return kMediumColour;
    case probes::SizeClass::kLarge:
      return kLargeColour;
  }
  return kEmptyColour;
}

std::string FormatBucketBound(uint64_t lower_bound) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  size_t unit = 0;
  uint64_t value = lower_bound;
  while (value >= 1024 && value % 1024 == 0 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  return std::to_string(value) + " " + kUnits[unit];
}

std::string Log2HistogramSvg(const Log2HistogramChart& chart) {
  uint64_t tallest = 0;
  for (const auto& [bound, count] : chart.buckets) tallest = std::max(tallest, count);
  if (chart.buckets.empty() || tallest == 0) return NoDataSvg(chart.title);

  const int first = AxisIndex(chart.buckets.begin()->first);
  const int last = AxisIndex(chart.buckets.rbegin()->first);
  const int bars = last - first + 1;
  const double left = 56, right = 12, top = 28, plot_height = 150, bottom = 64;
  const double bar_width = std::clamp(440.0 / bars, 8.0, 36.0);
  const double plot_width = bar_width * bars;
  const double width = left + plot_width + right;
  const double height = top + plot_height + bottom;
  uint64_t total = 0;
  for (const auto& [bound, count] : chart.buckets) total += count;

  std::string out = SvgOpen(width, height, chart.title);
  out +=
      Text(left, 16, "start", chart.title + " (" + std::to_string(total) + " " + chart.unit + ")",
           "font-weight=\"bold\" font-size=\"12\"");
  // Y axis: 0, half and the tallest count.
  for (const double fraction : {0.0, 0.5, 1.0}) {
    const double y = top + plot_height * (1 - fraction);
    out += "<line x1=\"" + Coord(left) + "\" y1=\"" + Coord(y) + "\" x2=\"" +
           Coord(left + plot_width) + "\" y2=\"" + Coord(y) + "\" stroke=\"#e0e0e0\"/>";
    out += Text(left - 4, y + 4, "end", FormatNumber(fraction * static_cast<double>(tallest)));
  }
  // Labels on every bar when they fit, else on every second, fourth, ... bar.
  const int label_every = std::max(1, static_cast<int>(std::ceil(16.0 / bar_width)));
  for (int index = first; index <= last; ++index) {
    const uint64_t bound = BoundOfIndex(index);
    const double x = left + bar_width * (index - first);
    const auto found = chart.buckets.find(bound);
    const uint64_t count = found == chart.buckets.end() ? 0 : found->second;
    if (count > 0) {
      const double bar_height =
          std::max(1.0, plot_height * static_cast<double>(count) / static_cast<double>(tallest));
      const std::string range =
          bound == 0 ? "0 B"
                     : "[" + FormatBucketBound(bound) + ", " + FormatBucketBound(bound * 2) + ")";
      out += "<rect x=\"" + Coord(x + 1) + "\" y=\"" + Coord(top + plot_height - bar_height) +
             "\" width=\"" + Coord(bar_width - 2) + "\" height=\"" + Coord(bar_height) +
             "\" fill=\"" + SizeClassColourOfBucket(bound) + "\"><title>" +
             EscapeHtml(range + ": " + std::to_string(count) + " " + chart.unit + " (" +
                        ClassNameOfBucket(bound) + ")") +
             "</title></rect>";
    }
    if ((index - first) % label_every == 0) {
      const double label_x = x + bar_width / 2;
      const double label_y = top + plot_height + 10;
      out += Text(label_x, label_y, "end", FormatBucketBound(bound),
                  "transform=\"rotate(-45 " + Coord(label_x) + " " + Coord(label_y) + ")\"");
    }
  }
  out += "<line x1=\"" + Coord(left) + "\" y1=\"" + Coord(top + plot_height) + "\" x2=\"" +
         Coord(left + plot_width) + "\" y2=\"" + Coord(top + plot_height) +
         "\" stroke=\"#404040\"/>";
  out += "</svg>";
  return out;
}

std::string SizeClassLegendHtml() {
  std::string out = "<div class=\"legend\">";
  const std::array<std::pair<const char*, const char*>, 4> classes = {{
      {kSmallColour, "Small [1 B, 1 KiB)"},
      {kMediumColour, "Medium [1 KiB, 1 MiB)"},
      {kLargeColour, "Large [1 MiB, ...)"},
      {kEmptyColour, "Empty (0 B)"},
  }};
  for (const auto& [colour, label] : classes) {
    out += "<span class=\"swatch\" style=\"background:" + std::string(colour) + "\"></span>" +
           EscapeHtml(label);
  }
  out += "</div>";
  return out;
}

std::string RampColour(double t) {
  // From a pale yellow (worst) through green to a dark blue (best): ordered in
  // lightness, so the best cell is the darkest also in greyscale.
  static constexpr std::array<std::array<double, 3>, 5> kStops = {{
      {255, 247, 188},
      {173, 221, 142},
      {65, 182, 196},
      {34, 94, 168},
      {12, 44, 132},
  }};
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0);
  const double position = t * (kStops.size() - 1);
  const size_t low = std::min(static_cast<size_t>(position), kStops.size() - 2);
  const double mix = position - static_cast<double>(low);
  char buffer[8];
  const auto channel = [&](size_t c) {
    return static_cast<int>(
        std::lround(kStops[low][c] + (kStops[low + 1][c] - kStops[low][c]) * mix));
  };
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", channel(0), channel(1), channel(2));
  return buffer;
}

std::string FormatNumber(double value, int significant) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  if (value == 0) return "0";
  significant = std::clamp(significant, 1, 12);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::max(0, significant - 1 - magnitude);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::min(decimals, 12), value);
  std::string text = buffer;
  // "50.0" reads as 50: drop zeros (and a bare point) after the decimal point.
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

namespace {

// The colour bar at x, from `top` down `height`: best at the top, with the best and
// worst values beside it when there are any.
std::string ColourBarSvg(double bar_x, double top, double height,
                         const std::optional<std::pair<double, double>>& best_and_worst) {
  std::string out;
  const int steps = 16;
  for (int i = 0; i < steps; ++i) {
    const double t = 1 - static_cast<double>(i) / (steps - 1);
    out += "<rect x=\"" + Coord(bar_x) + "\" y=\"" + Coord(top + height * i / steps) +
           "\" width=\"14\" height=\"" + Coord(height / steps + 0.5) + "\" fill=\"" +
           RampColour(t) + "\"/>";
  }
  if (best_and_worst) {
    out += Text(bar_x + 18, top + 10, "start", FormatNumber(best_and_worst->first));
    out += Text(bar_x + 18, top + height, "start", FormatNumber(best_and_worst->second));
  }
  return out + Text(bar_x, top + height + 16, "start", "best at top", "fill=\"#707070\"");
}

// One cell of the heatmap at (x, y): its colour by goodness t (1 best), its value
// and its tooltip; hatched when it has no value.
std::string HeatmapCellSvg(const Heatmap& heatmap, size_t r, size_t c, const HeatmapCell* cell,
                           double x, double y, double cell_width, double cell_height, double t) {
  const bool has_value = cell != nullptr && cell->value && std::isfinite(*cell->value);
  const std::string fill = has_value ? RampColour(t) : "url(#nodata)";
  std::string tooltip = heatmap.row_axis + " " + heatmap.row_labels[r] + ", " +
                        heatmap.column_axis + " " + heatmap.column_labels[c] + ": ";
  if (cell != nullptr && !cell->tooltip.empty()) {
    tooltip += cell->tooltip;
  } else if (has_value) {
    tooltip +=
        heatmap.value_name + " " + (cell->text.empty() ? FormatNumber(*cell->value) : cell->text);
  } else {
    tooltip += "no trial";
  }
  std::string out = "<g><title>" + EscapeHtml(tooltip) + "</title><rect x=\"" + Coord(x) +
                    "\" y=\"" + Coord(y) + "\" width=\"" + Coord(cell_width) + "\" height=\"" +
                    Coord(cell_height) + "\" fill=\"" + fill + "\" stroke=\"#ffffff\"/>";
  if (has_value) {
    const std::string text = cell->text.empty() ? FormatNumber(*cell->value) : cell->text;
    out += Text(x + cell_width / 2, y + cell_height / 2 + 4, "middle", text,
                t > 0.55 ? "fill=\"#ffffff\"" : "fill=\"#1d1d1d\"");
  }
  return out + "</g>";
}

}  // namespace

std::string HeatmapSvg(const Heatmap& heatmap) {
  const size_t rows = heatmap.row_labels.size();
  const size_t columns = heatmap.column_labels.size();
  if (rows == 0 || columns == 0) return NoDataSvg(heatmap.title);

  const auto cell_at = [&](size_t r, size_t c) -> const HeatmapCell* {
    if (r >= heatmap.cells.size() || c >= heatmap.cells[r].size()) return nullptr;
    return &heatmap.cells[r][c];
  };
  double low = 0, high = 0;
  bool any = false;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < columns; ++c) {
      const HeatmapCell* cell = cell_at(r, c);
      if (cell == nullptr || !cell->value || !std::isfinite(*cell->value)) continue;
      low = any ? std::min(low, *cell->value) : *cell->value;
      high = any ? std::max(high, *cell->value) : *cell->value;
      any = true;
    }
  }
  // 1 = best, 0 = worst; a grid of equal values is all "best".
  const auto goodness = [&](double value) {
    if (high == low) return 1.0;
    const double t = (value - low) / (high - low);
    return heatmap.lower_is_better ? 1 - t : t;
  };

  const double cell_width = 72, cell_height = 36;
  const double left = 140, top = 64, legend_width = 90, bottom = 24;
  const double grid_width = cell_width * static_cast<double>(columns);
  const double grid_height = cell_height * static_cast<double>(rows);
  const double width = left + grid_width + legend_width;
  const double height = top + grid_height + bottom;

  std::string out = SvgOpen(width, height, heatmap.title);
  out +=
      "<defs><pattern id=\"nodata\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
      "<rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/><path d=\"M0 6L6 0\" stroke=\"#b0b0b0\"/>"
      "</pattern></defs>";
  out += Text(8, 16, "start", heatmap.title, "font-weight=\"bold\" font-size=\"13\"");
  out +=
      Text(left + grid_width / 2, 34, "middle", heatmap.column_axis + " →", "font-weight=\"bold\"");
  out += Text(8, top - 8, "start", heatmap.row_axis + " ↓", "font-weight=\"bold\"");
  for (size_t c = 0; c < columns; ++c) {
    out += Text(left + cell_width * (static_cast<double>(c) + 0.5), top - 8, "middle",
                heatmap.column_labels[c]);
  }
  for (size_t r = 0; r < rows; ++r) {
    out += Text(left - 8, top + cell_height * (static_cast<double>(r) + 0.5) + 4, "end",
                heatmap.row_labels[r]);
  }
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < columns; ++c) {
      const HeatmapCell* cell = cell_at(r, c);
      const bool has_value = cell != nullptr && cell->value && std::isfinite(*cell->value);
      out += HeatmapCellSvg(heatmap, r, c, cell, left + cell_width * static_cast<double>(c),
                            top + cell_height * static_cast<double>(r), cell_width, cell_height,
                            has_value ? goodness(*cell->value) : 0);
    }
  }
  if (heatmap.marked && heatmap.marked->first < rows && heatmap.marked->second < columns) {
    const double x = left + cell_width * static_cast<double>(heatmap.marked->second);
    const double y = top + cell_height * static_cast<double>(heatmap.marked->first);
    out += "<rect x=\"" + Coord(x + 1.5) + "\" y=\"" + Coord(y + 1.5) + "\" width=\"" +
           Coord(cell_width - 3) + "\" height=\"" + Coord(cell_height - 3) +
           "\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"3\"/>";
    out += Text(x + cell_width - 9, y + 13, "middle", "★", "fill=\"#d62728\" font-size=\"13\"");
  }
  std::optional<std::pair<double, double>> best_and_worst;
  if (any) {
    best_and_worst = heatmap.lower_is_better ? std::pair{low, high} : std::pair{high, low};
  }
  out += ColourBarSvg(left + grid_width + 24, top, grid_height, best_and_worst);
  out += "</svg>";
  return out;
}

namespace {

// Ten categorical colours that stay apart for the common colour blindnesses.
constexpr std::array<const char*, 10> kSeriesColours = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                        "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                        "#9c755f", "#7f7f7f"};

// The y-axis labels of a log10 axis from `low` to `high`: 1, 2 and 5 times each
// power of ten inside, or only the powers of ten when they are many.
std::vector<double> LogTicks(double low, double high) {
  std::vector<double> ticks;
  const int first = static_cast<int>(std::floor(std::log10(low)));
  const int last = static_cast<int>(std::ceil(std::log10(high)));
  const bool dense = last - first <= 3;
  for (int power = first; power <= last; ++power) {
    for (const double step : {1.0, 2.0, 5.0}) {
      if (!dense && step != 1.0) continue;
      const double value = step * std::pow(10.0, power);
      if (value >= low * 0.999 && value <= high * 1.001) ticks.push_back(value);
    }
  }
  return ticks;
}

std::string SeriesSvg(const LineSeries& series, size_t index,
                      const std::function<double(double)>& x_of,
                      const std::function<double(double)>& y_of, const std::string& x_name) {
  std::vector<std::pair<double, double>> points;
  std::vector<std::string> tooltips;
  for (size_t i = 0; i < series.points.size(); ++i) {
    const auto [x, y] = series.points[i];
    if (!(x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y))) continue;
    points.emplace_back(x, y);
    tooltips.push_back(i < series.tooltips.size() ? series.tooltips[i]
                                                  : series.label + ": " + x_name + " " +
                                                        std::to_string(static_cast<uint64_t>(x)) +
                                                        " B, " + FormatNumber(y));
  }
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return points[a].first < points[b].first; });
  const std::string colour = kSeriesColours[index % kSeriesColours.size()];
  const std::string dash =
      index >= kSeriesColours.size() ? " stroke-dasharray=\"5 3\"" : std::string();
  std::string line;
  for (size_t i : order) {
    line += (line.empty() ? "" : " ") + Coord(x_of(points[i].first)) + "," +
            Coord(y_of(points[i].second));
  }
  std::string out = "<g><title>" + EscapeHtml(series.label) + "</title><polyline points=\"" + line +
                    "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.8\"" + dash + "/>";
  for (size_t i : order) {
    out += "<circle cx=\"" + Coord(x_of(points[i].first)) + "\" cy=\"" +
           Coord(y_of(points[i].second)) + "\" r=\"3\" fill=\"" + colour + "\"><title>" +
           EscapeHtml(tooltips[i]) + "</title></circle>";
  }
  return out + "</g>";
}

}  // namespace

std::string LogLogChartSvg(const LogLogChart& chart) {
  double x_low = 0, x_high = 0, y_low = 0, y_high = 0;
  bool any = false;
  for (const LineSeries& series : chart.series) {
    for (const auto& [x, y] : series.points) {
      if (!(x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y))) continue;
      x_low = any ? std::min(x_low, x) : x;
      x_high = any ? std::max(x_high, x) : x;
      y_low = any ? std::min(y_low, y) : y;
      y_high = any ? std::max(y_high, y) : y;
      any = true;
    }
  }
  if (!any) return NoDataSvg(chart.title);
  // Whole powers of two on x; on y a little room above and below the points.
  const double x_first = std::floor(std::log2(x_low)), x_last = std::ceil(std::log2(x_high));
  const double x_span = std::max(1.0, x_last - x_first);
  const double y_first = std::log10(y_low) - 0.05, y_last = std::log10(y_high) + 0.05;
  const double y_span = y_last - y_first;
  const double left = 64, top = 32, plot_width = 480, plot_height = 240, bottom = 52;
  const double legend_x = left + plot_width + 16, legend_width = 250;
  const double legend_height = 16.0 * static_cast<double>(chart.series.size()) + 8;
  const double height = top + std::max(plot_height + bottom, legend_height);
  const auto x_of = [&](double x) { return left + plot_width * (std::log2(x) - x_first) / x_span; };
  const auto y_of = [&](double y) {
    return top + plot_height * (1 - (std::log10(y) - y_first) / y_span);
  };

  std::string out = SvgOpen(legend_x + legend_width, height, chart.title);
  out += Text(8, 16, "start", chart.title, "font-weight=\"bold\" font-size=\"12\"");
  for (const double tick : LogTicks(std::pow(10.0, y_first), std::pow(10.0, y_last))) {
    const double y = y_of(tick);
    out += "<line x1=\"" + Coord(left) + "\" y1=\"" + Coord(y) + "\" x2=\"" +
           Coord(left + plot_width) + "\" y2=\"" + Coord(y) + "\" stroke=\"#e0e0e0\"/>";
    out += Text(left - 4, y + 4, "end", FormatNumber(tick));
  }
  // A label every power of two when they fit, else every second, fourth, ...
  const int label_every = std::max(1, static_cast<int>(std::ceil(x_span * 36 / plot_width)));
  for (int power = static_cast<int>(x_first); power <= static_cast<int>(x_last); ++power) {
    if ((power - static_cast<int>(x_first)) % label_every != 0) continue;
    const double x = x_of(std::ldexp(1.0, power));
    out += "<line x1=\"" + Coord(x) + "\" y1=\"" + Coord(top) + "\" x2=\"" + Coord(x) + "\" y2=\"" +
           Coord(top + plot_height) + "\" stroke=\"#f0f0f0\"/>";
    out += Text(x, top + plot_height + 14, "middle",
                FormatBucketBound(uint64_t{1} << std::clamp(power, 0, 62)));
  }
  out +=
      Text(left + plot_width / 2, top + plot_height + 34, "middle", chart.x_name + " (log2 axis)");
  out += Text(14, top + plot_height / 2, "middle", chart.y_name + " (log axis)",
              "transform=\"rotate(-90 14 " + Coord(top + plot_height / 2) + ")\"");
  out += "<rect x=\"" + Coord(left) + "\" y=\"" + Coord(top) + "\" width=\"" + Coord(plot_width) +
         "\" height=\"" + Coord(plot_height) + "\" fill=\"none\" stroke=\"#404040\"/>";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    out += SeriesSvg(chart.series[i], i, x_of, y_of, chart.x_name);
    const double y = top + 16.0 * static_cast<double>(i) + 8;
    const std::string colour = kSeriesColours[i % kSeriesColours.size()];
    out += "<line x1=\"" + Coord(legend_x) + "\" y1=\"" + Coord(y) + "\" x2=\"" +
           Coord(legend_x + 18) + "\" y2=\"" + Coord(y) + "\" stroke=\"" + colour +
           "\" stroke-width=\"2.5\"" +
           (i >= kSeriesColours.size() ? " stroke-dasharray=\"5 3\"" : "") + "/>";
    out += Text(legend_x + 24, y + 4, "start", chart.series[i].label);
  }
  out += "</svg>";
  return out;
}

}  // namespace artune::report
