// Call concurrency (MethodProfile::inflight): hand-built HTTP/2 streams through a
// ProbeSession (decoder -> OnCallEnd -> ProfileBuilder), the bound on calls whose
// end is never seen, the percentile rule, and the JSON and table forms.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artune/probes/profile.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "h2_builder.h"

namespace artune::probes {
namespace {

using testing::Append;
using testing::Bytes;
using testing::DataFrame;
using testing::Filler;
using testing::Frame;
using testing::GrpcMessageBytes;
using testing::HeaderEncoder;
using testing::HeadersFrames;

constexpr char kRecv[] = "/tensorflow.WorkerService/RecvTensor";
constexpr char kStatus[] = "/tensorflow.WorkerService/GetStatus";
constexpr uint8_t kFrameRstStream = 3;

// One connection's two directions, written call by call in the order the test
// wants them seen: every step feeds its bytes at once, so the decoder sees
// requests and responses interleaved exactly as written.
class Connection {
 public:
  Connection(ProbeSession& session, uint16_t client_port)
      : session_(session),
        client_to_server_{testing::Ipv4(127, 0, 0, 1, client_port),
                          testing::Ipv4(127, 0, 0, 1, 50051)} {
    session_.OnFlowOpen(client_to_server_, FlowOrigin::kHandshake, Now());
    session_.OnFlowOpen(client_to_server_.Reversed(), FlowOrigin::kHandshake, Now());
    Bytes preface(testing::kPreface.begin(), testing::kPreface.end());
    Append(preface, testing::SettingsFrame());
    Client(preface);
    Server(testing::SettingsFrame());
  }

  // Request HEADERS and its one message (END_STREAM): the call starts.
  uint32_t Call(const std::string& method) {
    const uint32_t stream = next_stream_;
    next_stream_ += 2;
    Bytes bytes = HeadersFrames(stream, client_encoder_.Encode(testing::RequestHeaders(method)),
                                /*end_stream=*/false);
    Append(bytes, DataFrame(stream, GrpcMessageBytes(Filler(40)), /*end_stream=*/true));
    Client(bytes);
    return stream;
  }
  // Response HEADERS, one message and the trailers (END_STREAM): the call ends.
  void Answer(uint32_t stream) {
    Bytes bytes = HeadersFrames(stream, server_encoder_.Encode(testing::ResponseHeaders()), false);
    Append(bytes,
           DataFrame(stream, GrpcMessageBytes(testing::RecvTensorResponse(1, {16}, 64)), false));
    Append(bytes, HeadersFrames(stream, server_encoder_.Encode(testing::Trailers()), true));
    Server(bytes);
  }
  void Close() {
    session_.OnFlowClose(client_to_server_, FlowEnd::kFin, Now());
    session_.OnFlowClose(client_to_server_.Reversed(), FlowEnd::kFin, Now());
  }

  void Client(const Bytes& bytes) { Feed(client_to_server_, bytes); }
  void Server(const Bytes& bytes) { Feed(client_to_server_.Reversed(), bytes); }
  HeaderEncoder& client_encoder() { return client_encoder_; }
  HeaderEncoder& server_encoder() { return server_encoder_; }
  uint32_t NextStream() {
    const uint32_t stream = next_stream_;
    next_stream_ += 2;
    return stream;
  }

 private:
  uint64_t Now() { return clock_ns_ += 1000; }
  void Feed(const FlowKey& flow, const Bytes& bytes) {
    StreamSegment segment;
    segment.flow = flow;
    segment.timestamp_ns = Now();
    segment.bytes = bytes;
    session_.OnStreamBytes(segment);
  }

  ProbeSession& session_;
  FlowKey client_to_server_;
  HeaderEncoder client_encoder_, server_encoder_;
  uint32_t next_stream_ = 1;
  uint64_t clock_ns_ = 0;
};

const MethodProfile& Find(const Profile& profile, const std::string& method,
                          MessageDirection direction = MessageDirection::kRequest) {
  for (const MethodProfile& m : profile.methods) {
    if (m.method == method && m.direction == direction) return m;
  }
  ADD_FAILURE() << "no " << method << " " << MessageDirectionName(direction) << " row in "
                << ProfileToJson(profile);
  static const MethodProfile none;
  return none;
}

Profile Finish(ProbeSession& session) { return session.Finish("test", {}, 1.0); }

// The samples of a method as a plain list, histogram bucket by bucket.
std::vector<uint32_t> Samples(const CallConcurrency& c) {
  std::vector<uint32_t> samples;
  for (const auto& [bucket, count] : c.histogram) samples.insert(samples.end(), count, bucket);
  return samples;
}

TEST(CallConcurrency, InterleavedCallsOnOneConnectionAreCountedAtEachStart) {
  ProbeSession session;
  Connection connection(session, 40000);
  const uint32_t a = connection.Call(kRecv);  // 1 in flight
  const uint32_t b = connection.Call(kRecv);  // 2
  const uint32_t c = connection.Call(kRecv);  // 3
  connection.Answer(a);
  const uint32_t d = connection.Call(kRecv);  // b, c, d: 3
  connection.Answer(b);
  connection.Answer(c);
  connection.Answer(d);
  connection.Call(kStatus);  // alone again: 1
  connection.Close();
  const Profile profile = Finish(session);

  const MethodProfile& recv = Find(profile, kRecv);
  EXPECT_EQ(recv.inflight.samples, 4u);
  EXPECT_EQ(Samples(recv.inflight), (std::vector<uint32_t>{1, 2, 3, 3}));
  EXPECT_EQ(recv.inflight.p50, 2u);  // nearest rank: the 2nd of 4
  EXPECT_EQ(recv.inflight.p90, 3u);
  EXPECT_EQ(recv.inflight.max, 3u);
  const MethodProfile& status = Find(profile, kStatus);
  EXPECT_EQ(Samples(status.inflight), (std::vector<uint32_t>{1}));
  EXPECT_EQ(status.inflight.p50, 1u);
  EXPECT_EQ(status.inflight.max, 1u);
  // Responses carry no concurrency of their own: the request row has it.
  EXPECT_EQ(Find(profile, kRecv, MessageDirection::kResponse).inflight.samples, 0u);
  EXPECT_EQ(Find(profile, kRecv, MessageDirection::kResponse).inflight.max, 0u);
  EXPECT_TRUE(profile.errors.empty()) << ProfileToJson(profile);
}

TEST(CallConcurrency, ConnectionsAreCountedSeparately) {
  ProbeSession session;
  Connection first(session, 40000);
  Connection second(session, 40001);
  first.Call(kRecv);   // 1
  first.Call(kRecv);   // 2
  second.Call(kRecv);  // 1: the other connection's two calls do not count
  first.Call(kRecv);   // 3
  second.Call(kRecv);  // 2
  first.Close();
  second.Close();
  const Profile profile = Finish(session);
  EXPECT_EQ(Samples(Find(profile, kRecv).inflight), (std::vector<uint32_t>{1, 1, 2, 2, 3}));
  EXPECT_EQ(Find(profile, kRecv).inflight.max, 3u);
}

TEST(CallConcurrency, AnUnansweredCallEndsWithItsConnection) {
  ProbeSession session;
  {
    Connection connection(session, 40000);
    connection.Call(kStatus);                                               // never answered: 1
    for (int i = 0; i < 3; ++i) connection.Answer(connection.Call(kRecv));  // 2 each
    connection.Close();
  }
  Connection next(session, 40002);  // same server, a new connection
  next.Answer(next.Call(kRecv));    // 1: the lost call is gone
  next.Close();
  const Profile profile = Finish(session);
  EXPECT_EQ(Samples(Find(profile, kRecv).inflight), (std::vector<uint32_t>{1, 2, 2, 2}));
  EXPECT_EQ(Samples(Find(profile, kStatus).inflight), (std::vector<uint32_t>{1}));
}

TEST(CallConcurrency, ResetEndsACall) {
  ProbeSession session;
  Connection connection(session, 40000);
  const uint32_t cancelled = connection.Call(kRecv);  // 1
  // The client cancels: RST_STREAM(CANCEL = 8).
  connection.Client(Frame(kFrameRstStream, 0, cancelled, {0, 0, 0, 8}));
  connection.Call(kRecv);  // 1
  connection.Close();
  EXPECT_EQ(Samples(Find(Finish(session), kRecv).inflight), (std::vector<uint32_t>{1, 1}));
}

TEST(CallConcurrency, AResponseEndedBeforeTheRequestMessageCountsOnlyThatMessage) {
  ProbeSession session;
  Connection connection(session, 40000);
  const uint32_t stream = connection.NextStream();
  connection.Client(HeadersFrames(
      stream, connection.client_encoder().Encode(testing::RequestHeaders(kRecv)), false));
  // A trailers-only response (the server refused before reading the request) ...
  Bytes refusal = HeadersFrames(
      stream,
      connection.server_encoder().Encode(
          {{":status", "200"}, {"content-type", "application/grpc"}, {"grpc-status", "8"}}),
      /*end_stream=*/true);
  connection.Server(refusal);
  // ... then the request's message: the call starts and ends at once.
  connection.Client(DataFrame(stream, GrpcMessageBytes(Filler(40)), true));
  connection.Call(kRecv);  // 1, not 2
  connection.Close();
  EXPECT_EQ(Samples(Find(Finish(session), kRecv).inflight), (std::vector<uint32_t>{1, 1}));
}

TEST(CallConcurrency, CallsWhoseEndIsLostAreBoundedPerConnection) {
  ProfileBuilder builder;
  GrpcMessage message;
  message.connection_id = 9;
  message.method = kRecv;
  message.method_known = true;
  message.call_start = true;
  const size_t starts = kMaxInflightCallsPerConnection + 100;
  for (size_t i = 0; i < starts; ++i) {
    message.stream_id = static_cast<uint32_t>(2 * i + 1);
    builder.AddMessage(message);
  }
  // Ending a call that was dropped by the bound changes nothing; ending a tracked
  // one makes room for exactly one.
  builder.EndCall(9, 1);
  builder.EndCall(9, static_cast<uint32_t>(2 * (starts - 1) + 1));
  message.stream_id = static_cast<uint32_t>(2 * starts + 1);
  builder.AddMessage(message);
  // Another connection is unaffected by the first one's stuck calls.
  message.connection_id = 10;
  message.stream_id = 1;
  builder.AddMessage(message);

  const Profile profile = builder.Build("test", 1.0, {}, 0);
  const CallConcurrency& c = Find(profile, kRecv).inflight;
  EXPECT_EQ(c.samples, starts + 2);
  EXPECT_EQ(c.max, kMaxInflightCallsPerConnection);
  // Sorted samples: 1, 1, 2, 3, ..., 1024 (x102): exact ranks 563 and 1014 of 1126.
  EXPECT_EQ(c.p50, 562u);
  EXPECT_EQ(c.p90, 1013u);
  // 1..64 exact, 65..1024 in the buckets 128, 256, 512 and 1024 (upper bounds).
  EXPECT_EQ(c.histogram.at(1), 2u);
  EXPECT_EQ(c.histogram.at(64), 1u);
  EXPECT_EQ(c.histogram.at(128), 64u);
  EXPECT_EQ(c.histogram.at(1024), 512u + 100u + 1u);
  EXPECT_EQ(c.histogram.rbegin()->first, 1024u);
}

TEST(CallConcurrency, PercentilesAreExactNearestRanksAndTheHistogramIsCoarseAbove64) {
  EXPECT_EQ(CallConcurrency::Percentile({}, 0.5), 0u);
  const CallConcurrency none = CallConcurrency::FromCounts({});
  EXPECT_EQ(none.samples, 0u);
  EXPECT_EQ(none.max, 0u);

  // 1 1 1 2 2 4 4 4 4 100
  const CallConcurrency small = CallConcurrency::FromCounts({{1, 3}, {2, 2}, {4, 4}, {100, 1}});
  EXPECT_EQ(small.samples, 10u);
  EXPECT_EQ(small.p50, 2u);  // the 5th smallest
  EXPECT_EQ(small.p90, 4u);  // the 9th
  EXPECT_EQ(small.max, 100u);
  EXPECT_EQ(small.histogram, (std::map<uint32_t, uint64_t>{{1, 3}, {2, 2}, {4, 4}, {128, 1}}));

  // Above 64 the stored buckets are coarse, the percentiles are not.
  const CallConcurrency large = CallConcurrency::FromCounts({{70, 5}, {90, 4}, {200, 1}});
  EXPECT_EQ(large.p50, 70u);
  EXPECT_EQ(large.p90, 90u);
  EXPECT_EQ(large.max, 200u);
  EXPECT_EQ(large.histogram, (std::map<uint32_t, uint64_t>{{128, 9}, {256, 1}}));

  EXPECT_EQ(CallConcurrency::BucketOf(64), 64u);
  EXPECT_EQ(CallConcurrency::BucketOf(65), 128u);
  EXPECT_EQ(CallConcurrency::BucketOf(128), 128u);
  EXPECT_EQ(CallConcurrency::BucketOf(129), 256u);
}

Profile ProfileWithConcurrency() {
  ProbeSession session;
  Connection connection(session, 40000);
  const uint32_t a = connection.Call(kRecv);
  connection.Call(kRecv);
  connection.Answer(a);
  connection.Close();
  return Finish(session);
}

TEST(CallConcurrency, JsonRoundTripKeepsIt) {
  const Profile profile = ProfileWithConcurrency();
  const std::string json = ProfileToJson(profile);
  const nlohmann::json parsed = nlohmann::json::parse(json);
  bool request_row_has_it = false;
  for (const nlohmann::json& m : parsed.at("methods")) {
    if (m.at("direction") == "request") {
      request_row_has_it = true;
      EXPECT_EQ(m.at("inflight").at("p50"), 1) << json;
      EXPECT_EQ(m.at("inflight").at("p90"), 2) << json;
      EXPECT_EQ(m.at("inflight").at("max"), 2) << json;
      EXPECT_EQ(m.at("inflight").at("samples"), 2) << json;
      EXPECT_EQ(m.at("inflight").at("histogram"), (nlohmann::json{{"1", 1}, {"2", 1}})) << json;
    } else {
      EXPECT_FALSE(m.contains("inflight")) << json;  // unknown: absent
    }
  }
  EXPECT_TRUE(request_row_has_it) << json;

  auto back = ProfileFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << json;
  const CallConcurrency& original = Find(profile, kRecv).inflight;
  const CallConcurrency& read = Find(*back, kRecv).inflight;
  EXPECT_EQ(read.samples, original.samples);
  EXPECT_EQ(read.histogram, original.histogram);
  EXPECT_EQ(read.p50, original.p50);
  EXPECT_EQ(read.p90, original.p90);
  EXPECT_EQ(read.max, original.max);
  EXPECT_EQ(ProfileToJson(*back), json);
}

TEST(CallConcurrency, ProfilesStoredWithoutItReadAsUnknown) {
  nlohmann::json old = nlohmann::json::parse(ProfileToJson(ProfileWithConcurrency()));
  for (nlohmann::json& m : old.at("methods")) m.erase("inflight");
  auto back = ProfileFromJson(old.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const CallConcurrency& read = Find(*back, kRecv).inflight;
  EXPECT_EQ(read.samples, 0u);
  EXPECT_TRUE(read.histogram.empty());
  EXPECT_EQ(read.p50, 0u);
  EXPECT_EQ(read.p90, 0u);
  EXPECT_EQ(read.max, 0u);
  EXPECT_NE(FormatProfileTable(*back).find("INFLIGHT"), std::string::npos);
}

TEST(CallConcurrency, TheTableShowsP50AndMaxOnRequestRows) {
  const std::string table = FormatProfileTable(ProfileWithConcurrency());
  EXPECT_NE(table.find("INFLIGHT p50/max"), std::string::npos) << table;
  std::string request_row, response_row;
  size_t start = 0;
  while (start < table.size()) {
    const size_t end = table.find('\n', start);
    const std::string line = table.substr(start, end - start);
    if (line.find(kRecv) != std::string::npos && line.find("request") != std::string::npos)
      request_row = line;
    if (line.find(kRecv) != std::string::npos && line.find("response") != std::string::npos)
      response_row = line;
    start = end == std::string::npos ? table.size() : end + 1;
  }
  EXPECT_NE(request_row.find(" 1/2 "), std::string::npos) << table;
  EXPECT_NE(response_row.find(" - "), std::string::npos) << table;
}

}  // namespace
}  // namespace artune::probes
