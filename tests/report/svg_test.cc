#include "artune/report/svg.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include "occurrences.h"

namespace artune::report {
namespace {

TEST(FormatBucketBound, UsesExactBinaryUnits) {
  EXPECT_EQ(FormatBucketBound(0), "0 B");
  EXPECT_EQ(FormatBucketBound(512), "512 B");
  EXPECT_EQ(FormatBucketBound(1024), "1 KiB");
  EXPECT_EQ(FormatBucketBound(64 * 1024), "64 KiB");
  EXPECT_EQ(FormatBucketBound(uint64_t{1} << 20), "1 MiB");
  EXPECT_EQ(FormatBucketBound(uint64_t{1} << 31), "2 GiB");
}

TEST(SizeClassColourOfBucket, FollowsTheClassBoundaries) {
  EXPECT_STREQ(SizeClassColourOfBucket(0), kEmptyColour);
  EXPECT_STREQ(SizeClassColourOfBucket(1), kSmallColour);
  EXPECT_STREQ(SizeClassColourOfBucket(512), kSmallColour);
  EXPECT_STREQ(SizeClassColourOfBucket(1024), kMediumColour);
  EXPECT_STREQ(SizeClassColourOfBucket(512 * 1024), kMediumColour);
  EXPECT_STREQ(SizeClassColourOfBucket(1024 * 1024), kLargeColour);
}

TEST(FormatNumber, KeepsSignificantDigits) {
  EXPECT_EQ(FormatNumber(0), "0");
  EXPECT_EQ(FormatNumber(12.345), "12.3");
  EXPECT_EQ(FormatNumber(0.045678), "0.0457");
  EXPECT_EQ(FormatNumber(15300), "15300");
  EXPECT_EQ(FormatNumber(-2.5), "-2.5");
  EXPECT_EQ(FormatNumber(50), "50");
  EXPECT_EQ(FormatNumber(0.1), "0.1");
  EXPECT_EQ(FormatNumber(1.0 / 0.0), "inf");
}

TEST(RampColour, RunsFromLightWorstToDarkBest) {
  EXPECT_EQ(RampColour(0), "#fff7bc");
  EXPECT_EQ(RampColour(1), "#0c2c84");
  EXPECT_EQ(RampColour(-3), RampColour(0));
  EXPECT_EQ(RampColour(7), RampColour(1));
  EXPECT_NE(RampColour(0.5), RampColour(0.6));
}

TEST(Log2HistogramSvg, DrawsOneColouredBarPerNonEmptyBucketWithTooltips) {
  Log2HistogramChart chart{"message sizes", "messages", {{8, 3}, {2048, 10}, {1 << 20, 1}}};
  const std::string svg = Log2HistogramSvg(chart);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("width=\""), std::string::npos);
  EXPECT_EQ(Count(svg, "<rect "), 3u);
  EXPECT_EQ(Count(svg, std::string("fill=\"") + kSmallColour), 1u);
  EXPECT_EQ(Count(svg, std::string("fill=\"") + kMediumColour), 1u);
  EXPECT_EQ(Count(svg, std::string("fill=\"") + kLargeColour), 1u);
  EXPECT_NE(svg.find("<title>[2 KiB, 4 KiB): 10 messages (Medium)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>[8 B, 16 B): 3 messages (Small)</title>"), std::string::npos);
  EXPECT_NE(svg.find("message sizes (14 messages)"), std::string::npos);
  // The tallest bar fills the 150-pixel plot.
  EXPECT_NE(svg.find("height=\"150.0\" fill=\"" + std::string(kMediumColour)), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(Log2HistogramSvg, ZeroByteBucketIsGreyAndEmptyChartSaysNoData) {
  const std::string zero = Log2HistogramSvg({"sizes", "messages", {{0, 2}, {1, 1}}});
  EXPECT_NE(zero.find(std::string("fill=\"") + kEmptyColour), std::string::npos);
  EXPECT_NE(zero.find("<title>0 B: 2 messages (Empty)</title>"), std::string::npos);
  const std::string empty = Log2HistogramSvg({"iovec <sizes>", "buffers", {}});
  EXPECT_NE(empty.find("no data"), std::string::npos);
  EXPECT_NE(empty.find("iovec &lt;sizes&gt;"), std::string::npos);
  EXPECT_EQ(empty.find("<rect"), std::string::npos);
}

Heatmap TwoByTwo() {
  Heatmap heatmap;
  heatmap.title = "p50 latency";
  heatmap.row_axis = "eager_threshold";
  heatmap.column_axis = "chunk_size";
  heatmap.value_name = "p50 µs";
  heatmap.row_labels = {"1KiB", "4KiB"};
  heatmap.column_labels = {"64KiB", "<256KiB>"};
  heatmap.cells = {{{10.0, "10", ""}, {20.0, "20", ""}}, {{30.0, "30", "custom <tip>"}}};
  heatmap.marked = std::make_pair(size_t{0}, size_t{0});
  return heatmap;
}

TEST(HeatmapSvg, ColoursBestDarkestMarksItAndShowsValuesOnHover) {
  const std::string svg = HeatmapSvg(TwoByTwo());
  // Lower is better: 10 is the best (darkest) and 30 the worst (lightest).
  EXPECT_NE(svg.find("fill=\"" + RampColour(1) + "\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"" + RampColour(0) + "\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"" + RampColour(0.5) + "\""), std::string::npos);
  EXPECT_NE(svg.find("<title>eager_threshold 1KiB, chunk_size 64KiB: p50 µs 10</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("<title>eager_threshold 4KiB, chunk_size 64KiB: custom &lt;tip&gt;</title>"),
            std::string::npos);
  // The short row's missing cell is hatched and says so.
  EXPECT_NE(svg.find("chunk_size &lt;256KiB&gt;: no trial</title>"), std::string::npos);
  EXPECT_NE(svg.find("url(#nodata)"), std::string::npos);
  EXPECT_NE(svg.find("★"), std::string::npos);
  EXPECT_NE(svg.find("stroke=\"#d62728\""), std::string::npos);
}

TEST(HeatmapSvg, HigherIsBetterFlipsTheRampAndOutOfRangeMarkIsIgnored) {
  Heatmap heatmap = TwoByTwo();
  heatmap.lower_is_better = false;
  heatmap.marked = std::make_pair(size_t{5}, size_t{0});
  const std::string svg = HeatmapSvg(heatmap);
  // 30 is now the best: drawn dark with white text.
  const size_t cell = svg.find("custom &lt;tip&gt;");
  ASSERT_NE(cell, std::string::npos);
  EXPECT_NE(svg.find("fill=\"" + RampColour(1) + "\"", cell), std::string::npos);
  EXPECT_EQ(svg.find("★"), std::string::npos);
  EXPECT_EQ(svg.find("stroke=\"#d62728\""), std::string::npos);
}

TEST(HeatmapSvg, EmptyGridSaysNoData) {
  Heatmap heatmap;
  heatmap.title = "nothing";
  EXPECT_NE(HeatmapSvg(heatmap).find("no data"), std::string::npos);
}

TEST(LogLogChartSvg, DrawsALinePerSeriesOnLogAxesWithTooltipsAndLegend) {
  LogLogChart chart;
  chart.title = "adaptive polling, 1 call in flight";
  chart.x_name = "unit size";
  chart.y_name = "µs per call";
  // Out of x order on purpose: the line is drawn in x order.
  chart.series.push_back({"eager", {{65536, 40}, {1024, 10}}, {"64 KiB: 40", "1 KiB: 10"}});
  chart.series.push_back({"rendezvous <read>", {{1 << 20, 1000}, {0, 5}}, {}});
  const std::string svg = LogLogChartSvg(chart);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(Count(svg, "<polyline "), 2u);
  // The 0-byte point cannot sit on a log axis: left out.
  EXPECT_EQ(Count(svg, "<circle "), 3u);
  EXPECT_NE(svg.find("<title>1 KiB: 10</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>rendezvous &lt;read&gt;: unit size 1048576 B, 1000</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">rendezvous &lt;read&gt;</text>"), std::string::npos);
  // x from 1 KiB to 1 MiB, a power of two per label (11 fit); y labels 10 .. 1000.
  EXPECT_NE(svg.find(">1 KiB</text>"), std::string::npos);
  EXPECT_NE(svg.find(">1 MiB</text>"), std::string::npos);
  EXPECT_NE(svg.find(">10</text>"), std::string::npos);
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos);
  EXPECT_NE(svg.find("unit size (log2 axis)"), std::string::npos);
  // The eager line runs from the 1 KiB point (left) to the 64 KiB one: x grows
  // along the polyline, and the cheaper point is lower on the page (larger y).
  const size_t points = svg.find("points=\"") + 8;
  const std::string line = svg.substr(points, svg.find('"', points) - points);
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf %lf,%lf", &x1, &y1, &x2, &y2), 4) << line;
  EXPECT_LT(x1, x2);
  EXPECT_GT(y1, y2);
  // Log2 in x: 1 KiB -> 64 KiB is 6 of the axis's 10 doublings.
  EXPECT_NEAR((x2 - x1) / 480.0, 0.6, 0.01);
}

TEST(LogLogChartSvg, NoPositivePointSaysNoData) {
  LogLogChart chart;
  chart.title = "empty";
  EXPECT_NE(LogLogChartSvg(chart).find("no data"), std::string::npos);
  chart.series.push_back({"eager", {{0, 1}, {1024, 0}}, {}});
  EXPECT_NE(LogLogChartSvg(chart).find("no data"), std::string::npos);
}

}  // namespace
}  // namespace artune::report
