#include "artune/report/capture_report.h"

#include "artune/base/number_text.h"
#include "artune/probes/profile_output.h"
#include "artune/report/html.h"
#include "artune/report/svg.h"

namespace artune::report {
namespace {

std::string Seconds(double seconds) { return Printf("%.2f s", seconds); }

std::string MethodTitle(const probes::MethodProfile& method) {
  return method.method + " (" + probes::MessageDirectionName(method.direction) + ")";
}

void AddSummary(HtmlDocument& document, const db::CaptureRecord& capture,
                const probes::Profile& profile) {
  uint64_t messages = 0, bytes = 0;
  for (const auto& method : profile.methods) {
    messages += method.messages;
    bytes += method.bytes;
  }
  uint64_t errors = 0;
  for (const auto& [kind, count] : profile.errors) errors += count;
  document.AddFacts({
      {"started (UTC)", capture.started_at},
      {"backend", profile.backend.empty() ? capture.backend : profile.backend},
      {"process", capture.process.empty() ? "-" : capture.process},
      {"duration", Seconds(profile.duration_s)},
      {"messages", std::to_string(messages)},
      {"payload bytes", probes::FormatBytes(bytes) + " (" + std::to_string(bytes) + " B)"},
      {"methods", std::to_string(profile.methods.size()) + " method and direction pairs"},
      {"connections",
       std::to_string(profile.connections.size()) +
           (profile.connections_joined_midway > 0
                ? " (" + std::to_string(profile.connections_joined_midway) + " joined midway)"
                : "")},
      {"decode errors", std::to_string(errors)},
      {"lost events", std::to_string(profile.lost_events)},
  });
}

void AddMethodTable(HtmlDocument& document, const probes::Profile& profile) {
  Table table;
  table.header = {"method", "direction", "messages", "bytes", "min",   "median",    "max",
                  "scheme", "small",     "medium",   "large", "empty", "compressed"};
  table.numeric = {false, false, true, true, true, true, true, false, true, true, true, true, true};
  for (const auto& method : profile.methods) {
    table.rows.push_back({
        method.method,
        probes::MessageDirectionName(method.direction),
        std::to_string(method.messages),
        probes::FormatBytes(method.bytes),
        probes::FormatBytes(method.min_size),
        probes::FormatBytes(static_cast<uint64_t>(method.median_size)),
        probes::FormatBytes(method.max_size),
        probes::PayloadSchemeName(method.scheme),
        std::to_string(method.classes.small.count),
        std::to_string(method.classes.medium.count),
        std::to_string(method.classes.large.count),
        std::to_string(method.classes.empty.count),
        std::to_string(method.compressed_messages),
    });
  }
  document.AddTable(table);
}

void AddMethodDetail(HtmlDocument& document, const probes::MethodProfile& method) {
  document.AddHeading(3, MethodTitle(method));
  document.AddParagraph("scheme " + std::string(probes::PayloadSchemeName(method.scheme)) + "; " +
                        std::to_string(method.messages) + " messages, " +
                        probes::FormatBytes(method.bytes) + "; Small " +
                        std::to_string(method.classes.small.count) + " (" +
                        probes::FormatBytes(method.classes.small.bytes) + "), Medium " +
                        std::to_string(method.classes.medium.count) + " (" +
                        probes::FormatBytes(method.classes.medium.bytes) + "), Large " +
                        std::to_string(method.classes.large.count) + " (" +
                        probes::FormatBytes(method.classes.large.bytes) + ")");
  std::string charts = "<div class=\"charts\">";
  charts += Log2HistogramSvg({"message sizes", "messages", method.message_sizes.buckets});
  if (!method.iovec_sizes.buckets.empty()) {
    charts += Log2HistogramSvg({"iovec sizes", "buffers", method.iovec_sizes.buckets});
  }
  charts += "</div>";
  document.AddMarkup(charts);
  if (!method.tensors.empty()) {
    Table tensors;
    tensors.caption = "tensors";
    tensors.header = {"dtype and shape", "count"};
    tensors.numeric = {false, true};
    for (const auto& [tensor, count] : method.tensors) {
      tensors.rows.push_back({tensor, std::to_string(count)});
    }
    document.AddTable(tensors);
  }
}

void AddIoFlows(HtmlDocument& document, const probes::Profile& profile) {
  if (profile.io_flows.empty()) return;
  document.BeginSection("I/O calls");
  document.AddParagraph(
      "Each send or receive system call of the traced process, with the sizes of the "
      "buffers of its iovec list.");
  Table table;
  table.header = {"flow", "kind", "calls", "bytes", "failed calls"};
  table.numeric = {false, false, true, true, true};
  for (const auto& flow : profile.io_flows) {
    table.rows.push_back({flow.flow, flow.send ? "send" : "receive", std::to_string(flow.calls),
                          probes::FormatBytes(flow.bytes), std::to_string(flow.failed_calls)});
  }
  document.AddTable(table);
  for (const auto& flow : profile.io_flows) {
    document.AddHeading(3, flow.flow + (flow.send ? " (send)" : " (receive)"));
    std::string charts = "<div class=\"charts\">";
    charts += Log2HistogramSvg({"iovec sizes", "buffers", flow.iovec_sizes.buckets});
    charts += Log2HistogramSvg({"iovecs per call", "calls", flow.iovecs_per_call.buckets});
    charts += "</div>";
    document.AddMarkup(charts);
  }
  document.EndSection();
}

void AddConnections(HtmlDocument& document, const probes::Profile& profile) {
  if (profile.connections.empty()) return;
  document.BeginSection("Connections");
  Table table;
  table.header = {"client",         "server",        "roles",
                  "requests",       "request bytes", "responses",
                  "response bytes", "DATA frames",   "unattributed bytes"};
  table.numeric = {false, false, false, true, true, true, true, true, true};
  for (const auto& connection : profile.connections) {
    std::string roles = connection.roles_known ? "known" : "guessed from ports";
    if (connection.joined_midway) roles += ", joined midway";
    table.rows.push_back(
        {connection.client, connection.server, roles, std::to_string(connection.request_messages),
         probes::FormatBytes(connection.request_bytes),
         std::to_string(connection.response_messages),
         probes::FormatBytes(connection.response_bytes), std::to_string(connection.data_frames),
         probes::FormatBytes(connection.unattributed_data_bytes)});
  }
  document.AddTable(table);
  document.EndSection();
}

void AddErrors(HtmlDocument& document, const probes::Profile& profile) {
  document.BeginSection("Errors");
  if (profile.errors.empty() && profile.lost_events == 0) {
    document.AddParagraph("No decode errors and no lost events.");
  } else {
    Table table;
    table.header = {"error", "count"};
    table.numeric = {false, true};
    for (const auto& [kind, count] : profile.errors) {
      table.rows.push_back({kind, std::to_string(count)});
    }
    if (profile.lost_events > 0) {
      table.rows.push_back(
          {"lost events (backend buffer full)", std::to_string(profile.lost_events)});
    }
    document.AddTable(table);
  }
  document.EndSection();
}

}  // namespace

std::string CaptureReportHtml(const db::CaptureRecord& capture, const probes::Profile& profile) {
  HtmlDocument document("artune capture " + std::to_string(capture.id));
  document.AddHeading(1, "artune capture " + std::to_string(capture.id));
  AddSummary(document, capture, profile);

  document.BeginSection("Methods");
  if (profile.methods.empty()) {
    document.AddParagraph("No gRPC messages were decoded in this capture.");
  } else {
    AddMethodTable(document, profile);
    document.AddMarkup(SizeClassLegendHtml());
    for (const auto& method : profile.methods) AddMethodDetail(document, method);
  }
  document.EndSection();
  AddIoFlows(document, profile);
  AddConnections(document, profile);
  AddErrors(document, profile);
  return document.Finish();
}

}  // namespace artune::report
