#include "artune/report/model_report.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "artune/report/html.h"
#include "artune/report/svg.h"
#include "artune/transport/knobs.h"

namespace artune::report {
namespace {

// Where a word sorts among its kind: its place in `known`, unknown words after.
int Rank(const std::string& word, std::initializer_list<const char*> known) {
  int rank = 0;
  for (const char* candidate : known) {
    if (word == candidate) return rank;
    ++rank;
  }
  return rank;
}

int ProtocolRank(const std::string& protocol) {
  return Rank(protocol, {"eager", "coalesced-eager", "rendezvous-read", "chunked-rendezvous"});
}

int PollingRank(const std::string& polling) { return Rank(polling, {"busy", "event", "adaptive"}); }

// A protocol group in chart and table order.
using GroupKey = std::tuple<int, std::string, uint64_t, uint32_t, uint32_t>;
GroupKey GroupOf(const db::LinkModelPointRow& point) {
  return {ProtocolRank(point.protocol), point.protocol, point.chunk_size, point.pipeline_depth,
          point.slices};
}

// A chart: one polling mode at one count of calls in flight.
using ChartKey = std::tuple<int, std::string, uint32_t>;

std::string Micros(double seconds) { return FormatNumber(seconds * 1e6) + " µs"; }

std::string PointTooltip(const db::LinkModelPointRow& point) {
  return LinkModelGroupLabel(point) + ", " + transport::FormatBytes(point.size) + ": " +
         Micros(point.median_s) + " per call (samples " + Micros(point.low_s) + " .. " +
         Micros(point.high_s) + ", " + std::to_string(point.rounds) + " kept)";
}

void AddCharts(HtmlDocument& document, const db::LinkModelRecord& model) {
  std::map<ChartKey, std::map<GroupKey, LineSeries>> charts;
  for (const db::LinkModelPointRow& point : model.points) {
    LineSeries& series =
        charts[{PollingRank(point.polling), point.polling, point.inflight}][GroupOf(point)];
    series.label = LinkModelGroupLabel(point);
    series.points.emplace_back(static_cast<double>(point.size), point.median_s * 1e6);
    series.tooltips.push_back(PointTooltip(point));
  }
  document.BeginSection("Cost of a call by size");
  document.AddParagraph(
      "Each point is the median wall time per call of calls that each carry one unit of the "
      "protocol, the given number of calls kept in flight: one eager packet of that size, one "
      "coalesced eager packet of that size holding several slices, one slice read in one "
      "rendezvous read, or one slice cut into chunks of the chunk size with that many reads in "
      "flight; a line of several slices per call: calls carrying that many such slices. Hover "
      "a point for its samples.");
  if (charts.empty()) document.AddParagraph("This model has no points.");
  for (auto& [key, groups] : charts) {
    const auto& [rank, polling, inflight] = key;
    LogLogChart chart;
    chart.title = polling + " polling, " + std::to_string(inflight) + " call" +
                  (inflight == 1 ? "" : "s") + " in flight";
    chart.x_name = "unit size";
    chart.y_name = "µs per call";
    for (auto& [group, series] : groups) chart.series.push_back(std::move(series));
    document.AddMarkup(LogLogChartSvg(chart));
  }
  document.EndSection();
}

void AddPointTable(HtmlDocument& document, const db::LinkModelRecord& model) {
  std::vector<const db::LinkModelPointRow*> points;
  for (const db::LinkModelPointRow& point : model.points) points.push_back(&point);
  std::sort(points.begin(), points.end(), [](const auto* a, const auto* b) {
    return std::tuple(GroupOf(*a), PollingRank(a->polling), a->polling, a->inflight, a->size) <
           std::tuple(GroupOf(*b), PollingRank(b->polling), b->polling, b->inflight, b->size);
  });
  Table table;
  table.header = {"protocol",  "polling",    "calls in flight", "size",
                  "median µs", "fastest µs", "slowest µs",      "samples"};
  table.numeric = {false, false, true, true, true, true, true, true};
  for (const db::LinkModelPointRow* point : points) {
    table.rows.push_back({LinkModelGroupLabel(*point), point->polling,
                          std::to_string(point->inflight), transport::FormatBytes(point->size),
                          FormatNumber(point->median_s * 1e6), FormatNumber(point->low_s * 1e6),
                          FormatNumber(point->high_s * 1e6), std::to_string(point->rounds)});
  }
  document.BeginSection("Points");
  document.AddTable(table);
  document.EndSection();
}

}  // namespace

std::string LinkModelGroupLabel(const db::LinkModelPointRow& point) {
  std::string label = point.protocol;
  if (point.chunk_size != 0) {
    label += " " + transport::FormatBytes(point.chunk_size) + " depth " +
             std::to_string(point.pipeline_depth);
  }
  if (point.slices > 1) label += " (" + std::to_string(point.slices) + " slices per call)";
  return label;
}

std::string LinkModelReportHtml(const db::LinkModelRecord& model) {
  const std::string title = "artune link model " + std::to_string(model.id);
  HtmlDocument document(title);
  document.AddHeading(1, title);
  document.AddFacts({
      {"created (UTC)", model.created_at},
      {"fabric", model.fabric},
      {"peer", model.peer},
      {"host", model.host},
      {"measured", std::to_string(model.rounds) + " interleaved round" +
                       (model.rounds == 1 ? "" : "s") + " in " + FormatNumber(model.duration_s) +
                       " s, " + std::to_string(model.points.size()) + " points"},
      {"use", "artune predict --workload ID --link-model " + std::to_string(model.id)},
  });
  AddCharts(document, model);
  AddPointTable(document, model);
  return document.Finish();
}

}  // namespace artune::report
