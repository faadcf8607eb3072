// The decoder when a syscall backend reports the two directions out of causal
// order (responses before the requests they answer), the frame positions it
// reports (FrameSpan), and ProbeSession's attribution of send iovecs to methods.
#include <gtest/gtest.h>

#include "artune/probes/http2_decoder.h"
#include "artune/probes/session.h"
#include "h2_builder.h"

namespace artune::probes {
namespace {

using testing::Bytes;

class Recorder : public GrpcMessageObserver {
 public:
  void OnGrpcMessage(const GrpcMessage& m) override {
    messages.push_back({std::string(m.method), m.direction});
  }
  void OnFrame(const FrameSpan& span) override {
    spans.push_back({span.side, span.begin, span.end, span.stream_id, std::string(span.method)});
  }
  struct Message {
    std::string method;
    MessageDirection direction;
  };
  struct Span {
    int side;
    uint64_t begin, end;
    uint32_t stream_id;
    std::string method;
  };
  std::vector<Message> messages;
  std::vector<Span> spans;
};

std::span<const uint8_t> Part(const Bytes& bytes, size_t from, size_t to) {
  return {bytes.data() + from, to - from};
}

size_t ClientPrologueSize() { return testing::kPreface.size() + testing::SettingsFrame().size(); }

TEST(FrameOrderTest, ResponsesFedBeforeTheirRequestsStillGetTheirMethod) {
  const auto conversation = testing::BuildConversation(
      {{"/pkg.Svc/A", 10, 20000, {}, 16384}, {"/pkg.Svc/B", 30, 40, {}, 16384}});
  Recorder recorder;
  DecodeErrorCounts errors;
  Http2ConnectionDecoder decoder(1, recorder, errors);
  decoder.Begin(0, FlowOrigin::kHandshake);
  decoder.Begin(1, FlowOrigin::kHandshake);
  const Bytes& client = conversation.client;
  // The preface says who the client is; then all the responses; then the requests.
  decoder.Feed(0, Part(client, 0, ClientPrologueSize()), 1);
  decoder.Feed(1, conversation.server, 2);
  EXPECT_TRUE(recorder.messages.empty()) << "responses wait for their requests";
  decoder.Feed(0, Part(client, ClientPrologueSize(), client.size()), 3);
  decoder.End(0);
  decoder.End(1);
  ASSERT_EQ(recorder.messages.size(), 4u);
  int responses = 0;
  for (const auto& message : recorder.messages) {
    EXPECT_NE(message.method, "unknown");
    responses += message.direction == MessageDirection::kResponse;
  }
  EXPECT_EQ(responses, 2);
  EXPECT_EQ(errors.Total(), 0u);
}

TEST(FrameOrderTest, HeldResponsesAreBoundedAndThenDecodedWithoutMethod) {
  const auto conversation = testing::BuildConversation({{"/pkg.Svc/A", 10, 20000, {}, 16384}});
  Recorder recorder;
  DecodeErrorCounts errors;
  DecoderLimits limits;
  limits.max_held_response_bytes = 1000;
  Http2ConnectionDecoder decoder(1, recorder, errors, limits);
  decoder.Begin(0, FlowOrigin::kHandshake);
  decoder.Begin(1, FlowOrigin::kHandshake);
  decoder.Feed(0, Part(conversation.client, 0, ClientPrologueSize()), 1);
  decoder.Feed(1, conversation.server, 2);  // more than 1000 bytes: decoded now
  ASSERT_EQ(recorder.messages.size(), 1u);
  EXPECT_EQ(recorder.messages[0].method, "unknown");
  EXPECT_EQ(recorder.messages[0].direction, MessageDirection::kResponse);
}

TEST(FrameOrderTest, FrameSpansTileEachSideAndNameTheirMethod) {
  const auto conversation = testing::BuildConversation({{"/pkg.Svc/A", 10, 50000, {}, 16384}});
  Recorder recorder;
  DecodeErrorCounts errors;
  Http2ConnectionDecoder decoder(1, recorder, errors);
  decoder.Begin(0, FlowOrigin::kHandshake);
  decoder.Begin(1, FlowOrigin::kHandshake);
  // Byte by byte: spans must not depend on how the stream is cut.
  for (uint8_t byte : conversation.client) decoder.Feed(0, std::span<const uint8_t>(&byte, 1), 1);
  for (uint8_t byte : conversation.server) decoder.Feed(1, std::span<const uint8_t>(&byte, 1), 1);
  for (int side = 0; side < 2; ++side) {
    uint64_t next = 0;
    for (const auto& span : recorder.spans) {
      if (span.side != side) continue;
      EXPECT_EQ(span.begin, next) << "side " << side;
      next = span.end;
      EXPECT_EQ(span.method, span.stream_id == 0 ? "" : "/pkg.Svc/A");
    }
    EXPECT_EQ(next, (side == 0 ? conversation.client : conversation.server).size());
  }
}

TEST(FrameOrderTest, AJoinedSideReportsNoSpans) {
  const auto conversation = testing::BuildConversation({{"/pkg.Svc/A", 10, 20, {}, 16384}});
  Recorder recorder;
  DecodeErrorCounts errors;
  Http2ConnectionDecoder decoder(1, recorder, errors);
  decoder.Begin(1, FlowOrigin::kMidStream);
  decoder.Feed(1, conversation.server, 1);
  decoder.End(1);
  EXPECT_TRUE(recorder.spans.empty());
}

// The session puts each sent iovec in the histogram of the method whose frame
// holds its first byte: here the client's whole stream goes out as one sendmsg
// cut at known places.
TEST(FrameOrderTest, SessionAttributesSendIovecsToMethods) {
  const auto conversation = testing::BuildConversation({{"/pkg.Svc/A", 3000, 20, {}, 16384}});
  SessionOptions options;
  options.attribute_iovecs = true;
  ProbeSession session(options);
  const FlowKey client_to_server{testing::Ipv4(127, 0, 0, 1, 40000),
                                 testing::Ipv4(127, 0, 0, 1, 50051)};
  session.OnFlowOpen(client_to_server, FlowOrigin::kHandshake, 1);
  session.OnFlowOpen(client_to_server.Reversed(), FlowOrigin::kHandshake, 1);
  const Bytes& client = conversation.client;
  const uint32_t prologue = static_cast<uint32_t>(ClientPrologueSize());
  const uint32_t rest = static_cast<uint32_t>(client.size()) - prologue;
  IoCallEvent send;
  send.syscall = IoSyscall::kSendmsg;
  send.flow = client_to_server;
  // preface | SETTINGS | the request's frames in two pieces | 100 bytes not sent
  send.iovec_lengths = {static_cast<uint32_t>(testing::kPreface.size()),
                        prologue - static_cast<uint32_t>(testing::kPreface.size()), 9, rest - 9,
                        100};
  send.result = client.size();
  // The call is reported before its bytes (either order must work).
  session.OnIoCall(send);
  session.OnStreamBytes({client_to_server, 1, client});
  session.OnStreamBytes({client_to_server.Reversed(), 2, conversation.server});
  const Profile profile = session.Finish("test", {}, 0);
  Log2Histogram expected_method, expected_unattributed;
  expected_unattributed.Add(testing::kPreface.size());
  expected_unattributed.Add(prologue - testing::kPreface.size());
  expected_method.Add(9);
  expected_method.Add(rest - 9);
  EXPECT_EQ(profile.unattributed_iovec_sizes.buckets, expected_unattributed.buckets);
  bool found = false;
  for (const MethodProfile& m : profile.methods) {
    if (m.method == "/pkg.Svc/A" && m.direction == MessageDirection::kRequest) {
      found = true;
      EXPECT_EQ(m.iovec_sizes.buckets, expected_method.buckets);
      EXPECT_EQ(m.messages, 1u);
    } else {
      EXPECT_TRUE(m.iovec_sizes.buckets.empty()) << m.method;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace artune::probes
