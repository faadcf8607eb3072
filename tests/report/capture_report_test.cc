#include "artune/report/capture_report.h"

#include <gtest/gtest.h>

#include <string>

#include "artune/report/svg.h"
#include "occurrences.h"

namespace artune::report {
namespace {

probes::MethodProfile Method(std::string name, probes::MessageDirection direction) {
  probes::MethodProfile method;
  method.method = std::move(name);
  method.direction = direction;
  return method;
}

// A capture with an untrusted method name, two directions, iovecs on one of them,
// a tensor, a connection and decode errors.
std::pair<db::CaptureRecord, probes::Profile> Fixture() {
  probes::Profile profile;
  profile.backend = "ebpf";
  profile.duration_s = 2.5;
  profile.errors = {{"hpack_decode", 2}};
  profile.lost_events = 4;

  auto request = Method("/tf.Worker/RecvTensor", probes::MessageDirection::kRequest);
  request.messages = 3;
  request.bytes = 300;
  request.message_sizes.Add(100, 3);
  for (int i = 0; i < 3; ++i) request.classes.Add(100);
  request.scheme = probes::PayloadScheme::kUniform;
  auto response = Method("/tf.Worker/RecvTensor", probes::MessageDirection::kResponse);
  response.messages = 2;
  response.bytes = 2 * (1 << 20);
  response.message_sizes.Add(1 << 20, 2);
  response.iovec_sizes.Add(64, 2);
  response.iovec_sizes.Add(1 << 20, 2);
  response.classes.Add(1 << 20);
  response.classes.Add(1 << 20);
  response.scheme = probes::PayloadScheme::kSkew;
  response.tensors = {{"DT_FLOAT[256,1024]", 2}};
  auto hostile =
      Method("/x.Evil/<script>alert(\"m\")</script>", probes::MessageDirection::kRequest);
  hostile.messages = 1;
  hostile.bytes = 5;
  hostile.message_sizes.Add(5);
  hostile.classes.Add(5);
  hostile.scheme = probes::PayloadScheme::kUniform;
  profile.methods = {hostile, request, response};

  probes::ConnectionProfile connection;
  connection.client = "127.0.0.1:40000";
  connection.server = "127.0.0.1:50051";
  connection.roles_known = true;
  connection.request_messages = 4;
  profile.connections = {connection};

  db::CaptureRecord capture;
  capture.id = 7;
  capture.started_at = "2024-05-01T10:00:00Z";
  capture.backend = "ebpf";
  capture.process = "python3 <train.py>";
  return {capture, profile};
}

TEST(CaptureReportHtml, EscapesUntrustedNamesEverywhere) {
  const auto [capture, profile] = Fixture();
  const std::string html = CaptureReportHtml(capture, profile);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("/x.Evil/&lt;script&gt;alert(&quot;m&quot;)&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("python3 &lt;train.py&gt;"), std::string::npos);
}

TEST(CaptureReportHtml, HasTheTablesHistogramsSchemeAndErrors) {
  const auto [capture, profile] = Fixture();
  const std::string html = CaptureReportHtml(capture, profile);
  EXPECT_NE(html.find("<title>artune capture 7</title>"), std::string::npos);
  EXPECT_NE(html.find("<h3>/tf.Worker/RecvTensor (request)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<h3>/tf.Worker/RecvTensor (response)</h3>"), std::string::npos);
  // A message-size histogram per method and direction, an iovec one only where
  // iovecs were seen.
  EXPECT_EQ(Count(html, "aria-label=\"message sizes\""), 3u);
  EXPECT_EQ(Count(html, "aria-label=\"iovec sizes\""), 1u);
  EXPECT_NE(html.find("<title>[1 MiB, 2 MiB): 2 buffers (Large)</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>[64 B, 128 B): 2 buffers (Small)</title>"), std::string::npos);
  EXPECT_NE(html.find(std::string("fill=\"") + kLargeColour), std::string::npos);
  EXPECT_NE(html.find("Medium [1 KiB, 1 MiB)"), std::string::npos);  // the legend
  EXPECT_NE(html.find("<td>skew</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>DT_FLOAT[256,1024]</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>127.0.0.1:50051</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>hpack_decode</td><td class=\"num\">2</td>"), std::string::npos);
  EXPECT_NE(html.find("lost events (backend buffer full)</td><td class=\"num\">4</td>"),
            std::string::npos);
}

TEST(CaptureReportHtml, EmptyCaptureSaysSo) {
  db::CaptureRecord capture;
  capture.id = 1;
  capture.backend = "pcap";
  probes::Profile profile;
  profile.backend = "pcap";
  const std::string html = CaptureReportHtml(capture, profile);
  EXPECT_NE(html.find("No gRPC messages were decoded in this capture."), std::string::npos);
  EXPECT_NE(html.find("No decode errors and no lost events."), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace artune::report
