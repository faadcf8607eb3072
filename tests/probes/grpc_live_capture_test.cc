// A real gRPC C++ server and client exchange TensorFlow-like RecvTensor traffic on
// 127.0.0.1 while the pcap backend captures `lo` live: the profile must recover the
// message counts, sizes, tensor shapes and per-method attribution exactly.
// Needs capture rights (root or CAP_NET_RAW + CAP_NET_ADMIN); skips otherwise.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "grpc_tensor_traffic.h"

namespace artune::probes {
namespace {

TEST(GrpcLiveCapture, RecoversTheExactDistributionPerMethod) {
  testing::KnownWorker worker;
  int port = 0;
  std::unique_ptr<grpc::Server> server = testing::StartKnownServer(worker, port);
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  BackendOptions options;
  options.pcap.interface = "lo";
  options.pcap.port = static_cast<uint16_t>(port);
  auto backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  const Status started = (*backend)->Start();
  if (started.code() == ErrorCode::kPermissionDenied) {
    GTEST_SKIP() << "no capture rights on lo (run as root or grant CAP_NET_RAW and "
                    "CAP_NET_ADMIN): "
                 << started.message();
  }
  ASSERT_TRUE(started.ok()) << started.ToString();

  SessionOptions session_options;
  session_options.server_port = static_cast<uint16_t>(port);
  ProbeSession session(session_options);
  std::atomic<bool> stop{false};
  Status run_status;
  std::thread capture([&] {
    StopCondition condition;
    condition.stop_requested = &stop;
    run_status = (*backend)->Run(session, condition);
  });

  const bool traffic_ok = testing::RunKnownTraffic(port);
  server->Shutdown();
  server->Wait();
  stop.store(true);
  capture.join();
  ASSERT_TRUE(run_status.ok()) << run_status.ToString();

  ASSERT_TRUE(traffic_ok);
  const Profile profile = session.Finish("pcap", (*backend)->counters(), 0);
  testing::ExpectKnownDistribution(profile);
  ASSERT_EQ(profile.connections.size(), 1u);
  EXPECT_EQ(profile.connections[0].server, "127.0.0.1:" + std::to_string(port));
}

}  // namespace
}  // namespace artune::probes
