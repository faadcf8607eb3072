// Workloads: scheme messages and capture replay lists (mix, sizes, determinism,
// byte cap), and RunReplay over a loopback server with validation.
#include "artune/tuner/workload.h"

#include <gtest/gtest.h>

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

TEST(CaptureWorkload, AnEmptyProfileSaysWhatToDo) {
  probes::Profile empty;
  auto workload = CaptureWorkload(empty, 5, {});
  ASSERT_FALSE(workload.ok());
  EXPECT_NE(workload.status().message().find("capture 5"), std::string::npos);
  EXPECT_NE(workload.status().message().find("--scheme"), std::string::npos);
}

TEST(RunReplay, SendsEveryMessageValidatedOverLoopback) {
  transport::Config config;
  config.fabric = transport::FabricKind::kTcp;
  auto bench = MakeArtuneBenchTransport(config);
  auto servers = StartLoopbackServers(*bench, 1);
  ASSERT_TRUE(servers.ok()) << servers.status().ToString();
  auto channel = bench->Connect((*servers)[0]->address());
  ASSERT_TRUE(channel.ok()) << channel.status().ToString();
  ReplayOptions options;
  options.messages = 12;
  auto workload = CaptureWorkload(TensorProfile(), 3, options);
  ASSERT_TRUE(workload.ok());
  for (uint32_t inflight : {1u, 4u}) {
    ReplayRunOptions run;
    run.inflight = inflight;
    run.rounds = 2;
    auto result = RunReplay(**channel, *workload, run);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_TRUE(result->validated) << result->validation_error;
    EXPECT_EQ(result->rpcs, 24u);
    EXPECT_EQ(result->bytes_delivered, 2 * workload->total_bytes);
    EXPECT_EQ(result->latency_us.count, 24u);
    EXPECT_GT(result->duration_s, 0);
  }
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
