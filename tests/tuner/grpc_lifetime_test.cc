// Debian's gRPC 1.51 starts a TCP backup poller when a write finds its socket
// full and lets it wait in rounds of up to 10 s that nothing ends early; the
// final grpc_shutdown, run when the process's last gRPC object goes, joins it.
// So programs whose large messages filled a socket often sat 10 s in their last
// channel's or server's destructor (issue 22, bench/relay.md). artune's stock
// gRPC users keep gRPC initialised for the process instead: after their run,
// with every channel and server gone, no grpc_shutdown has run. (ctest runs
// each test in a process of its own, so no other test's gRPC objects count.)
#include <grpc/grpc.h>
#include <gtest/gtest.h>

#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/tf_workload.h"

namespace artune::tuner {
namespace {

constexpr const char* kShutDown =
    "gRPC was shut down when the run's last channel and server went: in gRPC 1.51 that "
    "can wait up to 10 s for its TCP backup poller";

TEST(GrpcLifetimeTest, BenchChannelAndServerGoingRunNoGrpcShutdown) {
  {
    auto transport = MakeGrpcBenchTransport();
    PayloadSpec spec;
    spec.classes = {BufferClass::kLarge};
    spec.buffer_count = 1;
    spec.class_bytes[static_cast<size_t>(BufferClass::kLarge)] = 6 * 1024 * 1024;
    auto payload = GeneratePayload(spec);
    ASSERT_TRUE(payload.ok()) << payload.status().ToString();
    auto servers = StartLoopbackServers(*transport, 1);
    ASSERT_TRUE(servers.ok()) << servers.status().ToString();
    RunOptions options;
    options.kind = BenchmarkKind::kBandwidth;
    options.warmup_s = 0;
    options.duration_s = 0.1;
    options.inflight = 4;
    auto result = RunBenchmark(*transport, {(*servers)[0]->address()}, *payload, options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_GT(result->rpcs, 0u);
  }
  EXPECT_EQ(grpc_is_initialized(), 1) << kShutDown;
}

// The built-in workload ended 11.6 s late in 1 of 8 one-second runs at load 7.5.
TEST(GrpcLifetimeTest, WorkloadServersAndWorkersGoingRunNoGrpcShutdown) {
  TfWorkloadOptions options;
  options.steps = 1;
  options.duration_s = 0;
  auto result = RunTfWorkload(options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->validated) << result->validation_error;
  EXPECT_EQ(grpc_is_initialized(), 1) << kShutDown;
}

}  // namespace
}  // namespace artune::tuner
