// The engine end-to-end tests' fixture (engine_test.cc, engine_try_call_test.cc):
// a server and a client on loopback over the fabric the test is instantiated for
// (engine_test.cc instantiates EngineTest once for every test file).
#pragma once

#include <memory>
#include <vector>

#include "engine_test_util.h"

namespace artune::transport {

class EngineTest : public ::testing::TestWithParam<FabricKind> {
 protected:
  // Callers wrap it in ASSERT_NO_FATAL_FAILURE: a failed ASSERT here returns from
  // StartPair only, and a test that went on would use a null client and crash.
  void StartPair(const Config& config) {
    auto server = Server::Start(config, testing::TestListenAddress(GetParam()));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    testing::RegisterTestHandlers(*server_);
    auto client = Client::Connect(config, server_->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }
  void SetUp() override {
    ARTUNE_SKIP_UNLESS_FABRIC_USABLE(GetParam());
    config_ = testing::TestConfig(GetParam());
  }

  // Echoes slices of `sizes` and checks the response byte for byte.
  void EchoAndValidate(const std::vector<size_t>& sizes, uint32_t seed) {
    auto payload = testing::MakePayload(sizes, seed);
    auto views = testing::Views(payload);
    Result<Message> response = client_->Call("echo", views);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_TRUE(testing::SameSlices(*response, payload));
  }

  uint64_t Slices(const Stats& stats, Protocol protocol) {
    return stats.by_protocol[static_cast<int>(protocol)].slices;
  }

  void CallersDriveProgressTogether(PollingMode polling);

  Config config_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace artune::transport
