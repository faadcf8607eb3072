// Loopback is not a boundary between users (issue 26, 4 and 5): another local
// user could `apply config --live` a loopback server without a token, open its
// data connections, and hold its shm listener's connections until the hello
// timeout. Now each listener of such a server admits its own user (and root) at
// accept: tcp by the peer socket's owner (sock_diag), shm by SO_PEERCRED.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "artune/transport/credentials.h"
#include "control.grpc.pb.h"
#include "control_codec.h"
#include "engine_test_util.h"
#include "fabric/fabric.h"
#include "peer_credentials.h"
#include "peer_sockets_test_util.h"
#include "wire.h"

namespace artune::transport {
namespace {

using testing::ConnectAs;
using testing::ConnectTcpAs;
using testing::kNobody;

uint16_t PortOf(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

class LocalUsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run a client as uid 65534";
  }

  void StartServer(FabricKind fabric) {
    auto server = Server::Start(testing::TestConfig(fabric), "127.0.0.1:0", Credentials{});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    testing::RegisterTestHandlers(*server_);
    stub_ = control::Control::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  control::HandshakeResponse OwnHandshake() {
    control::HandshakeRequest request;
    request.set_wire_version(wire::kWireVersion);
    control::HandshakeResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(stub_->Handshake(&context, request, &response).ok());
    return response;
  }

  // The reported attack: a reconfiguration (timeout_ms = 1) over a control
  // connection that `uid` opened.
  grpc::Status ReconfigureAs(uid_t uid) {
    const int fd = ConnectTcpAs(uid, PortOf(server_->address()));
    EXPECT_GE(fd, 0);
    auto stub = control::Control::NewStub(
        grpc::CreateInsecureChannelFromFd("control", fd));  // the channel owns fd
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    control::ReconfigureRequest request;
    Config hostile = server_->config();
    hostile.timeout_ms = 1;
    *request.mutable_knobs() = ToKnobs(hostile);
    control::HandshakeResponse response;
    return stub->Reconfigure(&context, request, &response);
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<control::Control::Stub> stub_;
};

TEST_F(LocalUsersTest, ControlPlaneServesOnlyItsOwnUser) {
  StartServer(FabricKind::kTcp);
  const uint32_t before = server_->config().timeout_ms;
  grpc::Status foreign = ReconfigureAs(kNobody);
  EXPECT_FALSE(foreign.ok()) << "uid 65534 reconfigured another user's server";
  EXPECT_EQ(server_->config().timeout_ms, before);
  // The same call over a connection of the server's own user is served.
  grpc::Status own = ReconfigureAs(::geteuid());
  EXPECT_TRUE(own.ok()) << own.error_message();
  EXPECT_EQ(server_->config().timeout_ms, 1u);
}

TEST_F(LocalUsersTest, TcpDataListenerServesOnlyItsOwnUser) {
  StartServer(FabricKind::kTcp);
  const control::HandshakeResponse handshake = OwnHandshake();
  const uint16_t data_port = PortOf(handshake.data_endpoint());
  // A valid ticket, replayed by another user on a socket of its own.
  const int fd = ConnectTcpAs(kNobody, data_port);
  ASSERT_GE(fd, 0);
  const Config config;
  wire::ConnectParams params{};
  ASSERT_EQ(handshake.data_ticket().size(), sizeof(params.ticket));
  std::memcpy(params.ticket, handshake.data_ticket().data(), sizeof(params.ticket));
  params.wire_version = wire::kWireVersion;
  params.eager_buffer_count = config.eager_buffer_count;
  params.eager_buffer_bytes = EagerBufferBytes(config);
  params.max_outstanding = config.max_outstanding;
  wire::FrameHeader hello{};
  hello.magic = wire::kTcpMagic;
  hello.version = static_cast<uint8_t>(wire::kWireVersion);
  hello.kind = static_cast<uint8_t>(wire::FrameKind::kHello);
  hello.body_bytes = sizeof(params);
  (void)::send(fd, &hello, sizeof(hello), MSG_NOSIGNAL);
  (void)::send(fd, &params, sizeof(params), MSG_NOSIGNAL);
  timeval bound{20, 0};  // a bound, not a synchronisation: the close comes first
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
  char byte = 0;
  const ssize_t got = ::recv(fd, &byte, 1, 0);
  const int error = errno;
  EXPECT_TRUE(got == 0 || (got < 0 && error == ECONNRESET))
      << "the data listener kept uid 65534's connection (recv: " << got << ")";
  ::close(fd);
  EXPECT_EQ(server_->stats().connections_accepted, 0u);
  // The owner's client is served as before.
  auto client =
      Client::Connect(testing::TestConfig(FabricKind::kTcp), server_->address(), Credentials{});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100}, 1);
  auto views = testing::Views(payload);
  EXPECT_TRUE((*client)->Call("echo", views).ok());
}

TEST_F(LocalUsersTest, ShmListenerClosesOtherUsersConnectionsAtAccept) {
  if (fabric::ResolveFabricKind(FabricKind::kAuto) != FabricKind::kTcp) {
    GTEST_SKIP() << "fabric auto is verbs on this host: the shm listener runs beside tcp only";
  }
  StartServer(FabricKind::kAuto);
  const std::string endpoint = server_->local_endpoint();
  ASSERT_FALSE(endpoint.empty());
  auto [address, length] = testing::AbstractAddress(endpoint);
  const int fd = ConnectAs(kNobody, AF_UNIX, SOCK_SEQPACKET,
                           reinterpret_cast<const sockaddr*>(&address), length);
  ASSERT_GE(fd, 0);
  // No hello: the old listener held such a connection for its hello timeout (10 s).
  // 8 s is a bound below that, not a measurement: the close comes at accept.
  timeval bound{8, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
  char byte = 0;
  const ssize_t got = ::recv(fd, &byte, 1, 0);
  EXPECT_EQ(got, 0) << "the shm listener held uid 65534's connection (errno " << errno << ")";
  ::close(fd);
}

// The schedstat files of this process's threads, opened while descriptors are
// left (a test out of them cannot open one).
std::vector<int> OpenSchedstats() {
  std::vector<int> fds;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const int fd = ::open((task.path() / "schedstat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fds.push_back(fd);
  }
  return fds;
}

// Seconds those threads have been running or runnable (waiting for a CPU);
// threads asleep add nothing.
double RunnableSeconds(const std::vector<int>& schedstats) {
  double total = 0;
  for (int fd : schedstats) {
    char text[128] = {};
    if (::pread(fd, text, sizeof(text) - 1, 0) <= 0) continue;
    double running_ns = 0, waiting_ns = 0;
    if (std::sscanf(text, "%lf %lf", &running_ns, &waiting_ns) == 2) {
      total += (running_ns + waiting_ns) / 1e9;
    }
  }
  return total;
}

// Out of descriptors, the shm listener spun (21 797 failed accept4 in 5 s, one
// thread at 87 %): the pending connection keeps the listener readable.
TEST(ShmListener, RunningOutOfDescriptorsNeitherSpinsNorSticks) {
  if (fabric::ResolveFabricKind(FabricKind::kAuto) != FabricKind::kTcp) {
    GTEST_SKIP() << "fabric auto is verbs on this host: the shm listener runs beside tcp only";
  }
  auto server = Server::Start(testing::TestConfig(FabricKind::kAuto), "127.0.0.1:0", Credentials{});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);
  auto [address, length] = testing::AbstractAddress((*server)->local_endpoint());
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  size_t open_now = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++open_now;
  }
  const std::vector<int> schedstats = OpenSchedstats();
  rlimit tight = saved;
  tight.rlim_cur = open_now + schedstats.size() + 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  // Every descriptor taken, then each freed one turned into a connection the
  // server has no descriptor left to accept.
  std::vector<int> fillers;
  for (int fd = ::dup(0); fd >= 0; fd = ::dup(0)) fillers.push_back(fd);
  std::vector<int> waiting;
  for (int i = 0; i < 4 && !fillers.empty(); ++i) {
    ::close(fillers.back());
    fillers.pop_back();
    const int fd = ConnectAs(::geteuid(), AF_UNIX, SOCK_SEQPACKET,
                             reinterpret_cast<const sockaddr*>(&address), length);
    if (fd < 0) break;
    waiting.push_back(fd);
  }
  ASSERT_FALSE(waiting.empty());
  // The server cannot accept them; while they wait, it must idle. Judged by the
  // time its threads were running or waiting to run (schedstat), not by CPU time,
  // which a spinning thread on a loaded machine does not get.
  const double before = RunnableSeconds(schedstats);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double runnable = RunnableSeconds(schedstats) - before;
  EXPECT_LT(runnable, 0.25) << "the shm accept loop spins: runnable " << runnable << " s of 0.5";
  for (int fd : waiting) ::close(fd);
  for (int fd : fillers) ::close(fd);
  for (int fd : schedstats) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  // Recovered: a client on this host takes shm again (the pause is at most 1 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto client =
      Client::Connect(testing::TestConfig(FabricKind::kAuto), (*server)->address(), Credentials{});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->fabric(), FabricKind::kShm);
  auto payload = testing::MakePayload({100}, 1);
  auto views = testing::Views(payload);
  EXPECT_TRUE((*client)->Call("echo", views).ok());
}

TEST(PeerCredentials, TheOwnerOfALoopbackPeerIsFound) {
  // This process on both ends: our own listener, our own client socket.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = testing::LoopbackAddress(0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int client = ConnectTcpAs(::geteuid(), ntohs(address.sin_port));
  ASSERT_GE(client, 0);
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  Result<uid_t> owner = TcpPeerUid(accepted);
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  EXPECT_EQ(*owner, ::geteuid());
  EXPECT_TRUE(AdmitLocalTcpPeer(accepted).ok());
  ::close(client);
  ::close(accepted);
  ::close(listener);
}

}  // namespace
}  // namespace artune::transport
