// Every benchmark over real loopback servers, for each transport, with tiny
// durations: runs complete, every reply validated, calls counted. No timing checks.
#include <gtest/gtest.h>

#include "artune/tuner/bench_record.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"

namespace artune::tuner {
namespace {

std::unique_ptr<BenchTransport> MakeTransport(const std::string& name) {
  if (name == "grpc") return MakeGrpcBenchTransport();
  // The tcp fabric: runs on every machine (verbs is exercised by the lab).
  transport::Config config;
  config.fabric = transport::FabricKind::kTcp;
  return MakeArtuneBenchTransport(config);
}

class LoopbackTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    transport_ = MakeTransport(GetParam());
    ASSERT_NE(transport_, nullptr);
  }

  RunResult Run(BenchmarkKind kind, const PayloadSpec& spec, uint32_t servers = 1) {
    auto payload = GeneratePayload(spec);
    EXPECT_TRUE(payload.ok());
    auto started = StartLoopbackServers(*transport_, servers);
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    std::vector<std::string> addresses;
    for (auto& server : *started) addresses.push_back(server->address());
    RunOptions options;
    options.kind = kind;
    options.warmup_s = 0.02;
    options.duration_s = 0.1;
    options.inflight = 4;
    options.servers = servers;
    options.clients = 3;
    auto result = RunBenchmark(*transport_, addresses, *payload, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? *result : RunResult{};
  }

  std::unique_ptr<BenchTransport> transport_;
};

PayloadSpec Uniform(BufferClass c) {
  PayloadSpec spec;
  spec.classes = {c};
  return spec;
}

TEST_P(LoopbackTest, LatencyUniformSmall) {
  RunResult r = Run(BenchmarkKind::kLatency, Uniform(BufferClass::kSmall));
  EXPECT_TRUE(r.validated) << r.validation_error;
  EXPECT_GT(r.rpcs, 0u);
  EXPECT_EQ(r.latency_us.count, r.rpcs);
}

TEST_P(LoopbackTest, LatencyRandomMediumLarge) {
  PayloadSpec spec;
  spec.scheme = Scheme::kRandom;
  spec.classes = {BufferClass::kMedium, BufferClass::kLarge};
  spec.buffer_count = 4;
  RunResult r = Run(BenchmarkKind::kLatency, spec);
  EXPECT_TRUE(r.validated) << r.validation_error;
  EXPECT_GT(r.rpcs, 0u);
}

TEST_P(LoopbackTest, BandwidthSkew) {
  PayloadSpec spec;
  spec.scheme = Scheme::kSkew;
  RunResult r = Run(BenchmarkKind::kBandwidth, spec);
  EXPECT_TRUE(r.validated) << r.validation_error;
  EXPECT_GT(r.rpcs, 0u);
  EXPECT_GT(r.bandwidth_mbps, 0);
  EXPECT_EQ(r.bytes_delivered, r.rpcs * r.payload_bytes);
}

TEST_P(LoopbackTest, PsTwoServersThreeClients) {
  RunResult r = Run(BenchmarkKind::kPs, Uniform(BufferClass::kMedium), 2);
  EXPECT_TRUE(r.validated) << r.validation_error;
  EXPECT_GT(r.rpcs, 0u);
  EXPECT_GT(r.rpcs_per_s, 0);
}

TEST_P(LoopbackTest, ConnectToNothingIsUnavailable) {
  auto channel = transport_->Connect("127.0.0.1:1");
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), ErrorCode::kUnavailable);
}

TEST_P(LoopbackTest, StoredRecordCarriesConfigAndParameters) {
  PayloadSpec spec;
  spec.scheme = Scheme::kSkew;
  spec.buffer_count = 3;
  auto payload = GeneratePayload(spec);
  ASSERT_TRUE(payload.ok());
  RunOptions options;
  options.kind = BenchmarkKind::kBandwidth;
  RunResult result;
  result.validated = true;
  result.rpcs = 7;
  db::BenchRun record = MakeBenchRunRecord(*transport_, "loopback", *payload, options, result);
  EXPECT_EQ(record.transport, GetParam());
  EXPECT_EQ(record.benchmark, "bandwidth");
  EXPECT_EQ(record.scheme, "skew");
  EXPECT_EQ(record.parameters.at("skew_weights"), "10,30,60");
  EXPECT_EQ(record.parameters.at("buffers"), "3");
  EXPECT_FALSE(record.config.empty());
  if (GetParam() == "artune") {
    EXPECT_EQ(record.config.at("fabric"), "tcp");
  }
  EXPECT_EQ(record.rpcs, 7u);
}

INSTANTIATE_TEST_SUITE_P(Transports, LoopbackTest, ::testing::Values("artune", "grpc"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace artune::tuner
