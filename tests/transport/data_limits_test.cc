// What one peer may hold of a server's data plane (issue 26, item 3): a data
// connection idle for idle_timeout_ms is closed and gives back its receive pool
// (its client reconnects on its next call), and a Reconfigure whose receive pools
// would starve every later handshake is refused before it is applied, while one
// that is applied is answered so even when no pool has room right now.
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "allocator.h"
#include "engine_test_util.h"
#include "hostile_test_util.h"

namespace artune::transport {
namespace {

class IdleDataConnectionTest : public ::testing::TestWithParam<FabricKind> {
 protected:
  void SetUp() override { ARTUNE_SKIP_UNLESS_FABRIC_USABLE(GetParam()); }
};

// Before: a data connection stayed open (holding its receive pool) for as long as
// its client kept it, used or not: 448 of them locked every new tcp client out.
TEST_P(IdleDataConnectionTest, AnIdleConnectionIsClosedAndItsClientReconnects) {
  Config config = testing::TestConfig(GetParam());
  // Long enough that a loaded machine (CI's sanitizer run) delivers a call well
  // within the quarter of it that the client leaves as margin.
  config.idle_timeout_ms = 1000;
  auto server = Server::Start(config, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);
  auto& allocator = dynamic_cast<RegisteredAllocator&>((*server)->allocator());
  const uint64_t without_connections = allocator.bytes_in_use();

  auto client = Client::Connect(testing::TestConfig(GetParam()), (*server)->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100, 64 * 1024}, 3);
  Result<Message> first = (*client)->Call("echo", testing::Views(payload));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  first = Status::Cancelled("released");  // its buffers go back to the pools

  // Idle from here on: the server closes the connection, and its pool comes back.
  uint64_t in_use = allocator.bytes_in_use();
  for (int i = 0; i < 1000 && in_use > without_connections; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    in_use = allocator.bytes_in_use();
  }
  ASSERT_LE(in_use, without_connections) << "the idle connection still holds its receive pool";

  // The client notices on its next call and opens a new connection.
  Result<Message> again = (*client)->Call("echo", testing::Views(payload));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(testing::SameSlices(*again, payload));
  EXPECT_EQ((*server)->stats().connections_dropped, 0u) << "an idle close is not a drop";
}

// Before: a client called on a connection the server was about to close as idle
// (or had closed, unnoticed yet), and the call failed. Now a client quiet for
// three quarters of the server's idle_timeout_ms dials anew before calling, so the
// close meets no call: here the second call goes on a second data connection.
TEST_P(IdleDataConnectionTest, AClientQuietForMostOfTheTimeoutCallsOnANewConnection) {
  Config config = testing::TestConfig(GetParam());
  config.idle_timeout_ms = 1000;
  auto server = Server::Start(config, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);
  auto client = Client::Connect(testing::TestConfig(GetParam()), (*server)->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100}, 1);
  ASSERT_TRUE((*client)->Call("echo", testing::Views(payload)).ok());
  const uint64_t accepted = (*server)->stats().connections_accepted;

  ASSERT_TRUE((*client)->Call("echo", testing::Views(payload)).ok());
  EXPECT_EQ((*server)->stats().connections_accepted, accepted) << "a busy connection is kept";

  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  Result<Message> after_quiet = (*client)->Call("echo", testing::Views(payload));
  ASSERT_TRUE(after_quiet.ok()) << after_quiet.status().ToString();
  EXPECT_EQ((*server)->stats().connections_accepted, accepted + 1)
      << "the call went on the connection the server may be closing";
  EXPECT_EQ((*server)->stats().connections_dropped, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, IdleDataConnectionTest,
                         ::testing::ValuesIn(testing::TestFabrics()), testing::FabricName);

// A raw peer that says hello and then nothing: closed like any idle connection.
TEST_F(HostileTest, ASilentPeerAfterItsHelloIsClosedWhenIdle) {
  server_.reset();
  Config config = testing::TestConfig(FabricKind::kTcp);
  config.idle_timeout_ms = 200;
  auto server = Server::Start(config, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server_ = std::move(server).value();
  stub_ = control::Control::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  const std::string endpoint = Handshake().data_endpoint();
  data_port_ = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  int fd = ConnectRaw();
  SendHello(fd);
  EXPECT_TRUE(DroppedByServer(fd)) << "an idle data connection was kept open";
  ::close(fd);
}

// A config whose receive pool, for the open connections and the headroom, is
// more than the budget.
Config StarvingConfig(const Config& from) {
  Config config = from;
  config.eager_threshold = 256 * 1024;
  config.eager_buffer_count = 2048;  // 2049 x 257 KiB: half the budget per connection
  return config;
}

// Before: applied, after which every handshake needing a new pool was refused
// (RESOURCE_EXHAUSTED) until the config was changed back.
TEST_F(HostileTest, AReconfigureThatWouldStarveHandshakesIsRefused) {
  const Config before = server_->config();
  const Config starving = StarvingConfig(before);
  ASSERT_TRUE(ValidateConfig(starving).ok());
  const Status refused = server_->Reconfigure(starving);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument) << refused.ToString();
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("budget"));
  EXPECT_EQ(server_->config().eager_buffer_count, before.eager_buffer_count) << "it was applied";
  // Over the control plane too, and handshakes go on.
  EXPECT_FALSE(client_->Reconfigure(starving).ok());
  auto other = Client::Connect(testing::TestConfig(FabricKind::kTcp), server_->address());
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  auto payload = testing::MakePayload({10, 100 * 1024}, 9);
  Result<Message> response = (*other)->Call("echo", testing::Views(payload));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
}

// Before: a Reconfigure back to the defaults while the receive pools were full was
// applied but answered RESOURCE_EXHAUSTED (the answer's data ticket had no room).
TEST_F(HostileTest, AnAppliedReconfigureIsAnsweredSoWhenThePoolsAreFull) {
  // Fill the pools within one default pool of the budget: a geometry of 64 KiB
  // buffers (exactly a size class) for five raw connections.
  constexpr uint64_t kBudget = kAllocatorLimitBytes / 2;  // server.cc's receive-pool budget
  const uint64_t default_pool = (Config{}.eager_buffer_count + 1) * EagerBufferBytes(Config{});
  Config filling = server_->config();
  filling.eager_threshold = 64 * 1024 - kEagerPacketHeaderBytes;
  filling.coalesce_limit = 16 * 1024;
  ASSERT_EQ(EagerBufferBytes(filling), 64 * 1024u);
  constexpr uint64_t kRaw = 5;
  uint32_t count = 0;
  for (uint32_t c = 2; c <= wire::kMaxEagerBufferCount; ++c) {
    const uint64_t pools = default_pool + kRaw * (c + 1) * 65536;
    if (pools <= kBudget && pools + default_pool > kBudget) count = c;
  }
  ASSERT_GT(count, 0u);
  filling.eager_buffer_count = count;
  ASSERT_TRUE(server_->Reconfigure(filling).ok());

  std::vector<int> raw;
  for (uint64_t i = 0; i < kRaw; ++i) {
    int fd = ConnectRaw();
    wire::ConnectParams params{};
    const std::string ticket = Handshake().data_ticket();
    ASSERT_EQ(ticket.size(), sizeof(params.ticket));
    std::memcpy(params.ticket, ticket.data(), sizeof(params.ticket));
    params.wire_version = wire::kWireVersion;
    params.eager_buffer_count = count;
    params.eager_buffer_bytes = 64 * 1024;
    params.max_outstanding = filling.max_outstanding;
    wire::FrameHeader header = Frame(wire::FrameKind::kHello, sizeof(params));
    SendBytes(fd, &header, sizeof(header));
    SendBytes(fd, &params, sizeof(params));
    raw.push_back(fd);
  }
  for (int i = 0; i < 1000 && server_->stats().connections_accepted < 1 + kRaw; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server_->stats().connections_accepted, 1 + kRaw);

  // The client's connection keeps the default geometry: nothing new to open.
  const Status back = client_->Reconfigure(Config{.fabric = FabricKind::kTcp});
  EXPECT_TRUE(back.ok()) << back.ToString();
  EXPECT_EQ(server_->config().eager_buffer_count, Config{}.eager_buffer_count);
  ExpectOthersStillServed();
  for (int fd : raw) ::close(fd);
}

}  // namespace
}  // namespace artune::transport
