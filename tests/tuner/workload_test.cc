// Workloads: scheme messages and capture replay lists (mix, sizes, determinism,
// byte cap, buffer layout from captured iovecs), and RunReplay over a loopback server
// with validation (single- and multi-slice messages) and its minimum duration; the
// objective of a replay run (workload-time per pass).
#include "artune/tuner/workload.h"

#include <gtest/gtest.h>

#include "artune/tuner/trial.h"

namespace artune::tuner {
namespace {

probes::MethodProfile Method(std::string name, probes::MessageDirection direction,
                             std::map<uint64_t, uint64_t> buckets, uint64_t min_size,
                             uint64_t max_size) {
  probes::MethodProfile method;
  method.method = std::move(name);
  method.direction = direction;
  method.min_size = min_size;
  method.max_size = max_size;
  for (const auto& [lower, count] : buckets) {
    method.message_sizes.buckets[lower] = count;
    method.messages += count;
  }
  return method;
}

// One loopback server of the embedded transport under `config`, and a channel to it.
struct LoopbackLink {
  std::unique_ptr<BenchTransport> bench;
  std::vector<std::unique_ptr<BenchServer>> servers;
  std::unique_ptr<BenchChannel> channel;
};

Result<LoopbackLink> ConnectLoopback(const transport::Config& config) {
  LoopbackLink link;
  link.bench = MakeArtuneBenchTransport(config);
  ARTUNE_ASSIGN_OR_RETURN(link.servers, StartLoopbackServers(*link.bench, 1));
  ARTUNE_ASSIGN_OR_RETURN(link.channel, link.bench->Connect(link.servers[0]->address()));
  return link;
}

transport::Config TcpConfig() {
  transport::Config config;
  config.fabric = transport::FabricKind::kTcp;
  return config;
}

// Replays every message of `workload` `rounds` times with `inflight` calls in flight
// and expects each call back intact and counted.
void ExpectIntactReplay(BenchChannel& channel, const Workload& workload, uint32_t inflight,
                        uint32_t rounds) {
  ReplayRunOptions run;
  run.inflight = inflight;
  run.rounds = rounds;
  auto result = RunReplay(channel, workload, run);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->validated) << result->validation_error;
  EXPECT_EQ(result->rpcs, rounds * workload.messages.size());
  EXPECT_EQ(result->bytes_delivered, rounds * workload.total_bytes);
  EXPECT_EQ(result->latency_us.count, result->rpcs);
  EXPECT_EQ(result->passes, rounds);
  EXPECT_GT(result->duration_s, 0);
}

probes::Profile TensorProfile() {
  probes::Profile profile;
  profile.backend = "pcap";
  // 300 small requests, 300 responses of which 200 are ~64 KiB and 100 ~1 MiB; and
  // 100 messages of another method.
  profile.methods.push_back(Method("/tf.WorkerService/RecvTensor",
                                   probes::MessageDirection::kRequest, {{64, 300}}, 80, 100));
  profile.methods.push_back(Method("/tf.WorkerService/RecvTensor",
                                   probes::MessageDirection::kResponse,
                                   {{65536, 200}, {1048576, 100}}, 65536, 1200000));
  profile.methods.push_back(Method("/tf.WorkerService/RunGraph", probes::MessageDirection::kRequest,
                                   {{1024, 100}}, 1500, 1500));
  return profile;
}

TEST(CaptureWorkload, ReplaysTheMixAndTheSizes) {
  ReplayOptions options;
  options.messages = 70;
  auto workload = CaptureWorkload(TensorProfile(), 12, options);
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  EXPECT_EQ(workload->description, "capture:12");
  ASSERT_EQ(workload->messages.size(), 70u);
  // 700 captured messages -> 30 request, 30 response, 10 RunGraph.
  EXPECT_EQ(workload->mix.at("/tf.WorkerService/RecvTensor request"), 30u);
  EXPECT_EQ(workload->mix.at("/tf.WorkerService/RecvTensor response"), 30u);
  EXPECT_EQ(workload->mix.at("/tf.WorkerService/RunGraph request"), 10u);
  uint64_t total = 0, large = 0, exact_1500 = 0;
  for (const Payload& message : workload->messages) {
    ASSERT_EQ(message.buffer_count(), 1u);
    const uint64_t size = message.total_bytes();
    total += size;
    EXPECT_GE(size, 80u);
    EXPECT_LE(size, 1200000u);
    if (size >= 1048576) ++large;
    if (size == 1500) ++exact_1500;
  }
  EXPECT_EQ(total, workload->total_bytes);
  EXPECT_EQ(exact_1500, 10u);  // min == max: every RunGraph message is 1500 B
  EXPECT_GT(large, 0u);
}

TEST(CaptureWorkload, SameSeedSameListAndTheByteCapShortensIt) {
  ReplayOptions options;
  options.messages = 40;
  auto a = CaptureWorkload(TensorProfile(), 1, options);
  auto b = CaptureWorkload(TensorProfile(), 1, options);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->messages.size(), b->messages.size());
  for (size_t i = 0; i < a->messages.size(); ++i) {
    EXPECT_EQ(a->messages[i].stream_checksum(), b->messages[i].stream_checksum());
  }
  options.max_total_bytes = a->total_bytes / 4;
  auto capped = CaptureWorkload(TensorProfile(), 1, options);
  ASSERT_TRUE(capped.ok());
  EXPECT_LT(capped->messages.size(), a->messages.size());
  EXPECT_GE(capped->messages.size(), 1u);
}

TEST(CaptureWorkload, CarriesTheCapturedConcurrencyOfTheBusiestMethod) {
  probes::Profile profile = TensorProfile();
  auto unknown = CaptureWorkload(profile, 3, {});
  ASSERT_TRUE(unknown.ok()) << unknown.status().ToString();
  EXPECT_EQ(unknown->captured_inflight, 0u) << "a capture without samples has no concurrency";
  // RecvTensor: 300 call starts at p50 48; RunGraph: 100 at p50 2.
  profile.methods[0].inflight = probes::CallConcurrency::FromCounts({{40, 100}, {48, 200}});
  profile.methods[2].inflight = probes::CallConcurrency::FromCounts({{2, 100}});
  auto workload = CaptureWorkload(profile, 3, {});
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  EXPECT_EQ(workload->captured_inflight, 48u);
  EXPECT_EQ(workload->captured_inflight_method, "/tf.WorkerService/RecvTensor");
}

TEST(CaptureWorkload, AnEmptyProfileSaysWhatToDo) {
  probes::Profile empty;
  auto workload = CaptureWorkload(empty, 5, {});
  ASSERT_FALSE(workload.ok());
  EXPECT_NE(workload.status().message().find("capture 5"), std::string::npos);
  EXPECT_NE(workload.status().message().find("--scheme"), std::string::npos);
}

TEST(RunReplay, SendsEveryMessageValidatedOverLoopback) {
  auto link = ConnectLoopback(TcpConfig());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  ReplayOptions options;
  options.messages = 12;
  auto workload = CaptureWorkload(TensorProfile(), 3, options);
  ASSERT_TRUE(workload.ok());
  ASSERT_EQ(workload->messages.size(), 12u);
  for (uint32_t inflight : {1u, 4u}) ExpectIntactReplay(*link->channel, *workload, inflight, 2);
}

// A measurement of a few milliseconds is at the mercy of a scheduler tick: with
// min_duration_s the replay goes on pass after pass until that much time has passed,
// and every call of every pass is counted.
TEST(RunReplay, KeepsPassingUntilTheMinimumDuration) {
  auto link = ConnectLoopback(TcpConfig());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  ReplayOptions options;
  options.messages = 4;
  auto workload = CaptureWorkload(TensorProfile(), 3, options);
  ASSERT_TRUE(workload.ok());
  ReplayRunOptions run;
  run.inflight = 2;
  run.warmup_rounds = 0;
  run.rounds = 1;
  run.min_duration_s = 0.05;
  auto result = RunReplay(*link->channel, *workload, run);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->validated) << result->validation_error;
  EXPECT_GE(result->duration_s, 0.05);
  EXPECT_GE(result->passes, 1u);
  EXPECT_LE(result->passes, kMaxReplayPasses);
  EXPECT_EQ(result->rpcs, uint64_t{result->passes} * workload->messages.size());
  EXPECT_EQ(result->bytes_delivered, uint64_t{result->passes} * workload->total_bytes);
}

TEST(ObjectiveValue, WorkloadTimeIsSecondsPerPassUnlessFixedRounds) {
  RunResult run;
  run.duration_s = 1.5;
  run.passes = 30;
  run.latency_us.p50 = 70;
  run.bandwidth_mbps = 900;
  TrialOptions options;
  options.objective = Objective::kWorkloadTime;
  EXPECT_DOUBLE_EQ(ObjectiveValue(options, run), 0.05);
  // A resumed sweep stored before per-pass workload time keeps the old measure.
  options.replay_fixed_rounds = true;
  EXPECT_DOUBLE_EQ(ObjectiveValue(options, run), 1.5);
  options.objective = Objective::kLatencyP50;
  EXPECT_DOUBLE_EQ(ObjectiveValue(options, run), 70);
  options.objective = Objective::kBandwidth;
  EXPECT_DOUBLE_EQ(ObjectiveValue(options, run), 900);
}

// The RecvTensor profile of a gRPC parameter server traced with its iovecs. Half
// the responses are 1..2 KiB, each sent as one data iovec; half are 256..511 KiB,
// cut into 16..31 KiB frame-sized pieces (200 x ~384 KiB / ~24 KiB = 3200). Beside
// them: 14 B frame headers with length prefixes, 2-3 B header blocks, ~20 B
// TensorFlow header slices. The requests (~80 B) carried framing and one data
// iovec under the floor each.
probes::Profile IovecProfile() {
  probes::Profile profile;
  profile.backend = "preload";
  probes::MethodProfile request = Method("/tf.WorkerService/RecvTensor",
                                         probes::MessageDirection::kRequest, {{64, 400}}, 80, 100);
  request.iovec_sizes.buckets = {{8, 800}, {4, 400}, {16, 400}, {32, 400}};
  probes::MethodProfile response =
      Method("/tf.WorkerService/RecvTensor", probes::MessageDirection::kResponse,
             {{1024, 200}, {262144, 200}}, 1024, 524287);
  response.iovec_sizes.buckets = {{2, 800}, {8, 9000}, {16, 400}, {1024, 200}, {16384, 3200}};
  profile.methods = {request, response};
  return profile;
}

constexpr std::string_view kResponseLabel = "/tf.WorkerService/RecvTensor response";
constexpr std::string_view kRequestLabel = "/tf.WorkerService/RecvTensor request";

uint64_t SumOf(const std::vector<uint64_t>& sizes) {
  uint64_t sum = 0;
  for (uint64_t size : sizes) sum += size;
  return sum;
}

TEST(CaptureWorkload, SlicesFollowTheCapturedDataIovecsAndSumToTheMessage) {
  ReplayOptions options;
  options.messages = 60;
  auto workload = CaptureWorkload(IovecProfile(), 7, options);
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  ASSERT_EQ(workload->messages.size(), 60u);
  uint64_t requests = 0, small_responses = 0, large_responses = 0, response_slices = 0;
  for (const Payload& message : workload->messages) {
    const std::vector<uint64_t>& sizes = message.layout().sizes;
    EXPECT_EQ(SumOf(sizes), message.total_bytes());
    if (message.total_bytes() < 1024) {  // a request: no data iovecs, one buffer
      EXPECT_EQ(message.buffer_count(), 1u);
      ++requests;
      continue;
    }
    response_slices += sizes.size();
    if (message.total_bytes() < 2048) {  // sent as one iovec: replayed as one slice
      EXPECT_EQ(message.buffer_count(), 1u) << message.total_bytes();
      ++small_responses;
      continue;
    }
    // 256..511 KiB in 16..31 KiB pieces: 9 to 33 slices, none framing-sized; all
    // but the last an uncut draw, the last what was left (under a draw + the floor).
    ++large_responses;
    EXPECT_GE(message.buffer_count(), 9u);
    EXPECT_LE(message.buffer_count(), 33u);
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_GE(sizes[i], kDataIovecFloor) << "a framing-sized slice at " << i;
      if (i + 1 < sizes.size()) {
        EXPECT_GE(sizes[i], 16384u) << i;
        EXPECT_LE(sizes[i], 32767u) << i;
      } else {
        EXPECT_LT(sizes[i], 32767u + kDataIovecFloor);
      }
    }
  }
  EXPECT_EQ(requests, 30u);
  EXPECT_GT(small_responses, 0u);
  EXPECT_GT(large_responses, 0u);

  const ReplayLayout& response = workload->layout.at(std::string(kResponseLabel));
  EXPECT_TRUE(response.from_iovecs);
  EXPECT_EQ(response.data_iovecs, 3400u);
  EXPECT_EQ(response.framing_iovecs, 10200u);
  EXPECT_EQ(response.messages, 30u);
  EXPECT_EQ(response.slices, response_slices);
  EXPECT_GT(response.mean_slices(), 2.0);
  const ReplayLayout& request = workload->layout.at(std::string(kRequestLabel));
  EXPECT_FALSE(request.from_iovecs);
  EXPECT_EQ(request.data_iovecs, 0u);
  EXPECT_EQ(request.framing_iovecs, 2000u);
  EXPECT_EQ(request.messages, 30u);
  EXPECT_EQ(request.slices, 30u);

  const std::vector<std::string> lines = DescribeLayout(*workload);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("1 buffer/message (no data iovecs captured"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("slices/message"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("3400 captured data iovecs"), std::string::npos) << lines[1];
}

TEST(CaptureWorkload, EachMessageSentAsOneIovecReplaysAsOneSlice) {
  // The shape of a real capture (preload on `artune workload`): every message's
  // data was one iovec of its own size, from 256 B to 512 KiB. Drawing pieces from
  // the whole method's histogram would cut the large messages into small pieces.
  probes::Profile profile;
  probes::MethodProfile response =
      Method("/tensorflow.WorkerService/RecvTensor", probes::MessageDirection::kResponse,
             {{256, 100}, {4096, 100}, {65536, 30}, {262144, 20}}, 300, 500000);
  response.iovec_sizes.buckets = {{2, 250},    {8, 250},    {16, 250},   {256, 100},
                                  {4096, 100}, {65536, 30}, {262144, 20}};
  profile.methods = {response};
  ReplayOptions options;
  options.messages = 50;
  auto workload = CaptureWorkload(profile, 9, options);
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  for (const Payload& message : workload->messages) {
    EXPECT_EQ(message.buffer_count(), 1u) << message.total_bytes();
  }
  const ReplayLayout& layout = workload->layout.begin()->second;
  EXPECT_TRUE(layout.from_iovecs);
  EXPECT_EQ(layout.max_slices, 1u);
}

TEST(CaptureWorkload, WithoutIovecsEveryMessageIsOneBuffer) {
  ReplayOptions options;
  options.messages = 30;
  auto workload = CaptureWorkload(TensorProfile(), 2, options);  // pcap: no iovecs
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  for (const Payload& message : workload->messages) EXPECT_EQ(message.buffer_count(), 1u);
  ASSERT_EQ(workload->layout.size(), 3u);
  for (const auto& [label, layout] : workload->layout) {
    EXPECT_FALSE(layout.from_iovecs) << label;
    EXPECT_EQ(layout.slices, layout.messages) << label;
    EXPECT_EQ(layout.max_slices, 1u) << label;
  }
  // Only framing captured (all iovecs under the floor): one buffer too.
  probes::Profile framing_only = TensorProfile();
  for (probes::MethodProfile& method : framing_only.methods) {
    method.iovec_sizes.buckets = {{4, 100}, {8, 300}, {32, 100}};
  }
  auto framed = CaptureWorkload(framing_only, 2, options);
  ASSERT_TRUE(framed.ok());
  for (const Payload& message : framed->messages) EXPECT_EQ(message.buffer_count(), 1u);
}

TEST(CaptureWorkload, LayoutIsDeterministicBySeedAndLeavesSizesAlone) {
  ReplayOptions options;
  options.messages = 24;
  auto a = CaptureWorkload(IovecProfile(), 1, options);
  auto b = CaptureWorkload(IovecProfile(), 1, options);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->messages.size(), b->messages.size());
  for (size_t i = 0; i < a->messages.size(); ++i) {
    EXPECT_EQ(a->messages[i].layout().sizes, b->messages[i].layout().sizes);
    EXPECT_EQ(a->messages[i].stream_checksum(), b->messages[i].stream_checksum());
  }
  options.seed = 2;
  auto other = CaptureWorkload(IovecProfile(), 1, options);
  ASSERT_TRUE(other.ok());
  bool differs = false;
  for (size_t i = 0; i < a->messages.size(); ++i) {
    differs |= a->messages[i].layout().sizes != other->messages[i].layout().sizes;
  }
  EXPECT_TRUE(differs);
  // With the layout off: the same message sizes in the same order, one buffer each.
  options.seed = 1;
  options.iovec_layout = false;
  auto single = CaptureWorkload(IovecProfile(), 1, options);
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->messages.size(), a->messages.size());
  for (size_t i = 0; i < a->messages.size(); ++i) {
    EXPECT_EQ(single->messages[i].buffer_count(), 1u);
    EXPECT_EQ(single->messages[i].total_bytes(), a->messages[i].total_bytes());
  }
  EXPECT_FALSE(single->layout.at(std::string(kResponseLabel)).from_iovecs);
}

TEST(CaptureWorkload, SliceCountIsBoundedAndTheLastSliceTakesTheRest) {
  // 10 MiB messages over 64..127 B data iovecs: ~110 000 pieces without the bound.
  probes::Profile profile;
  probes::MethodProfile method = Method("/big", probes::MessageDirection::kResponse,
                                        {{8388608, 10}}, 10ull << 20, 10ull << 20);
  method.iovec_sizes.buckets = {{64, 1000}};
  profile.methods = {method};
  ReplayOptions options;
  options.messages = 2;
  options.max_total_bytes = 64ull << 20;
  auto workload = CaptureWorkload(profile, 4, options);
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  for (const Payload& message : workload->messages) {
    EXPECT_EQ(message.total_bytes(), 10ull << 20);
    ASSERT_EQ(message.buffer_count(), kMaxReplaySlices);
    uint64_t sum = 0;
    for (uint64_t size : message.layout().sizes) sum += size;
    EXPECT_EQ(sum, 10ull << 20);
    EXPECT_GT(message.layout().sizes.back(), 10ull << 19);
  }
  EXPECT_EQ(workload->layout.at("/big response").max_slices, kMaxReplaySlices);
}

TEST(RunReplay, MultiSliceMessagesValidateOverLoopback) {
  transport::Config config = TcpConfig();
  config.eager_threshold = 20 * 1024;  // some frame pieces eager, some rendezvous
  config.chunk_size = 16 * 1024;
  config.coalesce_limit = 4096;  // the ~100 B slices are packed
  auto link = ConnectLoopback(config);
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  ReplayOptions options;
  options.messages = 10;
  auto workload = CaptureWorkload(IovecProfile(), 5, options);
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  ASSERT_GT(workload->layout.at(std::string(kResponseLabel)).max_slices, 1u);
  ASSERT_EQ(workload->messages.size(), 10u);
  for (uint32_t inflight : {1u, 3u}) ExpectIntactReplay(*link->channel, *workload, inflight, 2);
}

TEST(SchemeWorkload, OneMessageOfTheSpec) {
  PayloadSpec spec;
  spec.scheme = Scheme::kSkew;
  spec.buffer_count = 10;
  auto workload = SchemeWorkload(spec);
  ASSERT_TRUE(workload.ok());
  EXPECT_EQ(workload->description, "scheme:skew");
  ASSERT_EQ(workload->messages.size(), 1u);
  EXPECT_EQ(workload->messages[0].buffer_count(), 10u);
}

}  // namespace
}  // namespace artune::tuner
