// The target relay's answer to Open (issue 22, faults): it dials only addresses of
// its own host, and it says so when it cannot carry the connection back to the
// origin relay, instead of accepting a connection that would never move a byte
// (the program's call hung until its own deadline).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "loopback_socket.h"
#include "relay.h"
#include "relay_wire.h"

namespace artune::relay {
namespace {

transport::Config TcpConfig() {
  transport::Config config;
  config.fabric = transport::FabricKind::kTcp;
  return config;
}

// A TCP socket bound to a loopback port; listening or not (then a connect to its
// port is refused).
class LoopbackPort {
 public:
  explicit LoopbackPort(bool listening) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    if (listening) listen(fd_, 8);
    port_ = testing::LocalPort(fd_);
  }
  ~LoopbackPort() { close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

class RelayOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RelayOptions options;
    options.config = TcpConfig();
    options.listen = "127.0.0.1:0";
    auto started = Relay::Start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    relay_ = std::move(*started);
    auto client = transport::Client::Connect(TcpConfig(), relay_->address(), {});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }
  void TearDown() override {
    client_.reset();
    if (relay_) relay_->Shutdown();
  }

  Status Open(const OpenRequest& open) {
    const std::vector<std::byte> bytes = EncodeOpen(open);
    const transport::ConstSlice slice(bytes);
    auto reply = client_->Call(kOpenMethod, std::span(&slice, 1));
    return reply.ok() ? Status::Ok() : reply.status();
  }

  std::unique_ptr<Relay> relay_;
  std::unique_ptr<transport::Client> client_;
};

TEST(RelayAddressTest, OnlyThisHostsAddressesAreLocal) {
  EXPECT_TRUE(IsLocalAddress("127.0.0.1"));
  EXPECT_TRUE(IsLocalAddress("127.0.0.53"));
  EXPECT_TRUE(IsLocalAddress("::1"));
  EXPECT_FALSE(IsLocalAddress("192.0.2.1"));  // TEST-NET-1: on no interface here
  EXPECT_FALSE(IsLocalAddress("2001:db8::1"));
  EXPECT_TRUE(IsLocalAddress("localhost"));
  EXPECT_FALSE(IsLocalAddress("example.com"));  // other names are not resolved
  EXPECT_FALSE(IsLocalAddress(""));
}

// A peer (a token holder beyond loopback, or any local user here) cannot make the
// relay dial another host: the Open is refused before any socket is made.
TEST_F(RelayOpenTest, RefusesADestinationOnAnotherHost) {
  auto origin = transport::Server::Start(TcpConfig(), "127.0.0.1:0", {});
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();
  for (const char* host : {"192.0.2.1", "2001:db8::1", "example.com"}) {
    const Status status = Open({1, 1, (*origin)->address(), host, 80});
    EXPECT_EQ(status.code(), ErrorCode::kPermissionDenied) << host << ": " << status.ToString();
  }
  (*origin)->Shutdown();
  EXPECT_EQ(relay_->counters().connections, 0u);
}

// The return dial fails (nothing listens at origin_address): the Open fails
// kUnavailable, so the origin resets the program's connection at once. Before,
// the Open succeeded and the connection was never carried (a hang).
TEST_F(RelayOpenTest, FailsWhenTheOriginRelayCannotBeDialledBack) {
  LoopbackPort closed(/*listening=*/false);
  LoopbackPort server(/*listening=*/true);
  const Status status =
      Open({2, 1, "127.0.0.1:" + std::to_string(closed.port()), "127.0.0.1", server.port()});
  EXPECT_EQ(status.code(), ErrorCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("origin relay"), std::string::npos) << status.ToString();
}

TEST_F(RelayOpenTest, SucceedsWhenTheOriginRelayAnswers) {
  auto origin = transport::Server::Start(TcpConfig(), "127.0.0.1:0", {});
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();
  LoopbackPort server(/*listening=*/true);
  const Status status = Open({3, 1, (*origin)->address(), "127.0.0.1", server.port()});
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(relay_->counters().connections, 1u);
  relay_->Shutdown();
  (*origin)->Shutdown();
}

// A peer that is stopped (SIGSTOP, a hung host): its kernel accepts the TCP
// connection and nothing answers, so a handshake with it lasts the whole control
// deadline (10 s). The dial back to such an origin runs off the relay's loop: an
// Open from another origin is decided while that one still waits. Before, the loop
// dialled it itself and every other connection waited the deadline out.
TEST_F(RelayOpenTest, AnOriginThatHangsDelaysNoOtherConnection) {
  const int hung = testing::ListenLoopback();  // its accept below is bounded
  LoopbackPort server(/*listening=*/true);

  const std::vector<std::byte> stalled_open = EncodeOpen(
      {4, 1, "127.0.0.1:" + std::to_string(testing::LocalPort(hung)), "127.0.0.1", server.port()});
  const transport::ConstSlice slice(stalled_open);
  // Shared with the completion, which may run after a failed assertion ends the test.
  struct Stalled {
    std::atomic<bool> decided{false};
    std::promise<Status> status;
  };
  auto stalled = std::make_shared<Stalled>();
  client_->CallAsync(kOpenMethod, std::span(&slice, 1),
                     transport::CallOptions{std::chrono::seconds(30)},
                     [stalled](Result<transport::Message> reply) {
                       stalled->decided.store(true);
                       stalled->status.set_value(reply.ok() ? Status::Ok() : reply.status());
                     });
  // The relay is dialling the hung origin now (its control-plane connection).
  const int dialled = accept(hung, nullptr, nullptr);
  ASSERT_GE(dialled, 0) << "the relay never dialled the origin back";

  auto origin = transport::Server::Start(TcpConfig(), "127.0.0.1:0", {});
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();
  const Status other = Open({5, 1, (*origin)->address(), "127.0.0.1", server.port()});
  EXPECT_TRUE(other.ok()) << other.ToString();
  EXPECT_FALSE(stalled->decided.load())
      << "the other Open was decided only after the hung dial gave up";

  // The hung origin goes away: its Open fails at once, and says why.
  close(dialled);
  close(hung);
  auto decided = stalled->status.get_future();
  ASSERT_EQ(decided.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const Status verdict = decided.get();
  EXPECT_EQ(verdict.code(), ErrorCode::kUnavailable) << verdict.ToString();
  relay_->Shutdown();
  (*origin)->Shutdown();
}

}  // namespace
}  // namespace artune::relay
