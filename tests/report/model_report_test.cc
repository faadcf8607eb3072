#include "artune/report/model_report.h"

#include <gtest/gtest.h>

#include <string>
#include "occurrences.h"

namespace artune::report {
namespace {

db::LinkModelPointRow Point(std::string protocol, std::string polling, uint64_t size,
                            uint32_t inflight, double us, uint64_t chunk = 0, uint32_t depth = 0) {
  return {std::move(protocol), std::move(polling), chunk,       depth, size, inflight,
          us * 1e-6,           us * 0.9e-6,        us * 1.2e-6, 3};
}

db::LinkModelRecord Model() {
  db::LinkModelRecord model;
  model.id = 7;
  model.created_at = "2026-11-27T10:00:00.000Z";
  model.host = "<lab-host>";
  model.peer = "loopback";
  model.fabric = "shm";
  model.rounds = 1;
  model.duration_s = 3.6;
  // Adaptive before busy in the record: the charts still put busy first.
  for (uint32_t inflight : {1u, 4u}) {
    model.points.push_back(
        Point("chunked-rendezvous", "adaptive", 1 << 20, inflight, 500, 512 << 10, 4));
    model.points.push_back(
        Point("chunked-rendezvous", "adaptive", 4 << 20, inflight, 1800, 512 << 10, 4));
    model.points.push_back(Point("eager", "adaptive", 1024, inflight, 20));
    model.points.push_back(Point("eager", "adaptive", 65536, inflight, 45));
  }
  model.points.push_back(Point("eager", "busy", 1024, 1, 12));
  model.points.push_back(Point("rendezvous-read", "busy", 1 << 20, 1, 400));
  return model;
}

TEST(LinkModelGroupLabel, NamesTheChunkAndDepthOfAChunkedGroup) {
  EXPECT_EQ(LinkModelGroupLabel(Point("eager", "busy", 64, 1, 1)), "eager");
  EXPECT_EQ(LinkModelGroupLabel(Point("chunked-rendezvous", "busy", 1 << 20, 1, 1, 512 << 10, 4)),
            "chunked-rendezvous 512KiB depth 4");
  db::LinkModelPointRow eight = Point("rendezvous-read", "busy", 1 << 20, 1, 1);
  eight.slices = 8;
  EXPECT_EQ(LinkModelGroupLabel(eight), "rendezvous-read (8 slices per call)");
}

TEST(LinkModelReportHtml, DrawsAChartPerPollingAndInflightWithALinePerProtocolGroup) {
  const std::string html = LinkModelReportHtml(Model());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("artune link model 7"), std::string::npos);
  // busy x1, adaptive x1, adaptive x4, in that order.
  const size_t busy = html.find("aria-label=\"busy polling, 1 call in flight\"");
  const size_t adaptive1 = html.find("aria-label=\"adaptive polling, 1 call in flight\"");
  const size_t adaptive4 = html.find("aria-label=\"adaptive polling, 4 calls in flight\"");
  ASSERT_NE(busy, std::string::npos) << html;
  ASSERT_NE(adaptive1, std::string::npos);
  ASSERT_NE(adaptive4, std::string::npos);
  EXPECT_LT(busy, adaptive1);
  EXPECT_LT(adaptive1, adaptive4);
  EXPECT_EQ(Count(html, "<svg "), 3u);
  // Lines: busy (eager, rendezvous-read), adaptive x1 and x4 (eager, chunked) each.
  EXPECT_EQ(Count(html, "<polyline "), 6u);
  EXPECT_EQ(Count(html, "<circle "), 10u);
  // In a chart eager comes before the chunked group (protocol order, not the record's).
  const size_t eager = html.find(">eager</text>", adaptive1);
  const size_t chunked = html.find(">chunked-rendezvous 512KiB depth 4</text>", adaptive1);
  EXPECT_LT(eager, chunked);
  EXPECT_LT(chunked, adaptive4);
  // A point's tooltip: median, fastest and slowest sample, samples kept.
  EXPECT_NE(html.find("<title>chunked-rendezvous 512KiB depth 4, 4MiB: 1800 µs per call "
                      "(samples 1620 µs .. 2160 µs, 3 kept)</title>"),
            std::string::npos)
      << html;
  // Every point in the table, the untrusted host escaped.
  EXPECT_NE(html.find("<td>rendezvous-read</td>"), std::string::npos);
  EXPECT_NE(html.find("&lt;lab-host&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<lab-host>"), std::string::npos);
  EXPECT_NE(html.find("1 interleaved round in 3.6 s, 10 points"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(LinkModelReportHtml, AModelWithoutPointsSaysSo) {
  db::LinkModelRecord model = Model();
  model.points.clear();
  const std::string html = LinkModelReportHtml(model);
  EXPECT_NE(html.find("This model has no points."), std::string::npos);
  EXPECT_EQ(Count(html, "<svg "), 0u);
}

}  // namespace
}  // namespace artune::report
