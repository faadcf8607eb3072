// Two relays in this process carry one TCP connection to an echo server: the bytes
// come back exact and in order whether a chunk is written by the Data handler's
// thread (small, in order) or by the event loop (large, or behind a backlog), and
// while the server reads slowly at first, so chunks queue behind a full socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "redirect_asker.h"
#include "redirect_protocol.h"
#include "relay.h"
#include "slow_echo_server.h"

namespace artune::relay {
namespace {

using Bytes = std::vector<std::byte>;

using testing::ConnectLoopback;
using testing::ListenLoopback;
using testing::LocalPort;
using testing::PortOf;
using testing::SetTimeouts;
using testing::SlowEchoServer;

TEST(RelayStream, MixedChunkSizesEchoExactlyInOrder) {
  // The echo server reads slowly at first (the relay's queue fills up), then echoes
  // everything until the client half-closes.
  SlowEchoServer server(64 << 10);

  RelayOptions target_options;
  target_options.listen = "127.0.0.1:0";
  auto target = Relay::Start(target_options);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  const std::string control =
      (std::filesystem::temp_directory_path() / ("relay-stream-" + std::to_string(getpid())))
          .string();
  RelayOptions origin_options;
  origin_options.relay_port = PortOf((*target)->address());
  origin_options.control_socket = control;
  auto origin = Relay::Start(origin_options);
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();

  const int client = ConnectLoopback(testing::CarriedPort(control, server.port()));
  // Writes of 1 B to 300 KiB (below and above the handler's 64 KiB), random bytes.
  std::mt19937 random(22);
  Bytes sent;
  std::vector<size_t> writes;
  for (size_t total = 0; total < (8u << 20);) {
    const size_t size = random() % 4 == 0 ? 1 + random() % (300 << 10) : 1 + random() % 2000;
    writes.push_back(size);
    total += size;
  }
  for (size_t size : writes) {
    for (size_t i = 0; i < size; ++i) sent.push_back(std::byte(static_cast<uint8_t>(random())));
  }
  std::thread writer([client, &sent, &writes] {
    size_t offset = 0;
    for (size_t size : writes) {
      for (size_t done = 0; done < size;) {
        const ssize_t wrote = send(client, sent.data() + offset + done, size - done, MSG_NOSIGNAL);
        if (wrote <= 0) return;
        done += static_cast<size_t>(wrote);
      }
      offset += size;
    }
    shutdown(client, SHUT_WR);
  });
  Bytes echoed;
  Bytes buffer(256 << 10);
  while (echoed.size() < sent.size()) {
    const ssize_t got = recv(client, buffer.data(), buffer.size(), 0);
    if (got <= 0) break;
    echoed.insert(echoed.end(), buffer.begin(), buffer.begin() + got);
  }
  writer.join();
  close(client);
  (*origin)->Shutdown();
  (*target)->Shutdown();
  ASSERT_EQ(echoed.size(), sent.size());
  EXPECT_TRUE(echoed == sent) << "the echo differs from what was sent";
}

// A relay that is stopped (SIGSTOP, a hung host): its kernel accepts the origin's
// TCP connection and nothing answers, so asking it for a carried connection lasts
// the control deadline (10 s). The origin asks off its loop: a connection to
// another host's relay is carried while that question still waits. Before, the
// loop dialled the hung relay itself and every other connection waited it out.
TEST(RelayStream, AHungPeerRelayDelaysNoOtherDestination) {
  RelayOptions target_options;
  target_options.listen = "127.0.0.1:0";
  auto target = Relay::Start(target_options);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  const uint16_t relay_port = PortOf((*target)->address());
  // The hung relay: 127.0.0.2 at the same port (one relay port for every host).
  const int hung = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in hung_address{};
  hung_address.sin_family = AF_INET;
  hung_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1);
  hung_address.sin_port = htons(relay_port);
  if (bind(hung, reinterpret_cast<sockaddr*>(&hung_address), sizeof hung_address) != 0) {
    close(hung);
    GTEST_SKIP() << "127.0.0.2:" << relay_port << " is taken: " << std::strerror(errno);
  }
  ASSERT_EQ(listen(hung, 8), 0);
  SetTimeouts(hung);  // bounds the accept below
  // The echo server on 127.0.0.1, behind the live relay.
  const int listener = ListenLoopback();
  std::thread server([listener] {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    SetTimeouts(fd);
    char buffer[256];
    for (ssize_t got; (got = recv(fd, buffer, sizeof buffer, 0)) > 0;) {
      if (send(fd, buffer, static_cast<size_t>(got), MSG_NOSIGNAL) != got) break;
    }
    close(fd);
  });
  const std::string control =
      (std::filesystem::temp_directory_path() / ("relay-hung-" + std::to_string(getpid())))
          .string();
  RelayOptions origin_options;
  origin_options.relay_port = relay_port;
  origin_options.control_socket = control;
  auto origin = Relay::Start(origin_options);
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();

  // Ask about 127.0.0.2 and leave the question pending: the origin dials the hung relay.
  const int asker = testing::SendQuestion(control, hung_address.sin_addr, 9);
  ASSERT_GE(asker, 0);
  const int dialled = accept(hung, nullptr, nullptr);
  ASSERT_GE(dialled, 0) << "the origin never dialled the relay on 127.0.0.2";

  // Meanwhile a connection to 127.0.0.1 is carried, both ways.
  const int client = ConnectLoopback(testing::CarriedPort(control, LocalPort(listener)));
  const char hello[] = "carried while another relay hangs";
  ASSERT_EQ(send(client, hello, sizeof hello, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof hello));
  char echoed[sizeof hello] = {};
  size_t got = 0;
  while (got < sizeof hello) {
    const ssize_t n = recv(client, echoed + got, sizeof hello - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ASSERT_EQ(got, sizeof hello);
  EXPECT_EQ(std::memcmp(echoed, hello, sizeof hello), 0);
  RedirectReply reply;
  EXPECT_LT(recv(asker, &reply, sizeof reply, MSG_DONTWAIT), 0)
      << "the question about 127.0.0.2 was answered before the other connection was carried";

  // The hung relay goes away: its question is answered "direct" at once.
  close(dialled);
  close(hung);
  ASSERT_EQ(recv(asker, &reply, sizeof reply, 0), static_cast<ssize_t>(sizeof reply));
  EXPECT_EQ(reply.verdict, kRedirectDirect);
  close(asker);
  shutdown(client, SHUT_WR);
  close(client);
  server.join();
  close(listener);
  (*origin)->Shutdown();
  (*target)->Shutdown();
}

}  // namespace
}  // namespace artune::relay
