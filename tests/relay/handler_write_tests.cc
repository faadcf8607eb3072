// A Data handler that writes a carried connection's socket holds up nothing else.
//
// The handler writes the program's (or the server's) socket on the transport's
// thread, and a loopback write wakes the reader, who often takes that thread's core
// at once: the handler stays stopped inside its write for a while. It once held the
// relay's state lock there, so the loop, woken meanwhile by the other direction of
// the call, slept on the lock behind it (one more hand-off per call). Here the
// write to one connection's program socket is held inside sendmsg, which this test
// binary interposes (its own binary for that), and another connection must still
// be carried; then every byte of both arrives, exact and in order.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loopback_socket.h"
#include "redirect_asker.h"
#include "redirect_protocol.h"
#include "relay.h"

namespace {

// The held write: the program-side socket whose peer has this port, written by a
// transport thread (named "artune-..."; the relay's loop thread is not).
std::atomic<uint16_t> hold_port{0};
std::mutex hold_mutex;
std::condition_variable hold_changed;
bool held = false;      // a write is being held
bool released = false;  // let it go

bool ShouldHold(int fd) {
  const uint16_t port = hold_port.load();
  if (port == 0) return false;
  char name[17] = {};
  prctl(PR_GET_NAME, name);
  if (std::strncmp(name, "artune-", 7) != 0) return false;
  sockaddr_in peer{};
  socklen_t length = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0 ||
      peer.sin_family != AF_INET || ntohs(peer.sin_port) != port) {
    return false;
  }
  return hold_port.exchange(0) == port;  // once
}

}  // namespace

extern "C" ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  if (ShouldHold(fd)) {
    std::unique_lock lock(hold_mutex);
    held = true;
    hold_changed.notify_all();
    hold_changed.wait_for(lock, std::chrono::seconds(30), [] { return released; });
  }
  return syscall(SYS_sendmsg, fd, message, flags);
}

namespace artune::relay {
namespace {

using testing::ConnectLoopback;
using testing::ListenLoopback;
using testing::LocalPort;
using testing::PortOf;
using testing::SetTimeouts;

// Reads exactly `size` bytes (or fewer on an error or the socket's timeout).
std::string ReadExactly(int fd, size_t size) {
  std::string got;
  char buffer[4096];
  while (got.size() < size) {
    const ssize_t n = recv(fd, buffer, std::min(sizeof buffer, size - got.size()), 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

bool SendAll(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Two relays in this process, a server the test plays, and the hold.
class RelayHandlerWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      std::lock_guard lock(hold_mutex);
      held = released = false;
    }
    listener_ = ListenLoopback();
    RelayOptions target_options;
    target_options.listen = "127.0.0.1:0";
    auto target = Relay::Start(target_options);
    ASSERT_TRUE(target.ok()) << target.status().ToString();
    target_ = std::move(*target);
    const std::string control =
        (std::filesystem::temp_directory_path() / ("relay-hold-" + std::to_string(getpid())))
            .string();
    RelayOptions origin_options;
    origin_options.relay_port = PortOf(target_->address());
    origin_options.control_socket = control;
    auto origin = Relay::Start(origin_options);
    ASSERT_TRUE(origin.ok()) << origin.status().ToString();
    origin_ = std::move(*origin);
    carried_ = testing::CarriedPort(control, LocalPort(listener_));
  }

  void TearDown() override {
    Release();
    for (int fd : fds_) close(fd);
    if (origin_) origin_->Shutdown();
    if (target_) target_->Shutdown();
    if (listener_ >= 0) close(listener_);
  }

  // A carried connection: the program's end and the server's end.
  std::pair<int, int> Carry() {
    const int client = ConnectLoopback(carried_);
    const int server = accept(listener_, nullptr, nullptr);
    EXPECT_GE(server, 0);
    SetTimeouts(server, 5);
    fds_.push_back(client);
    fds_.push_back(server);
    return {client, server};
  }

  // The server speaks on (client, server) until the origin's Data handler (not its
  // loop, which takes a chunk when the handler finds the lock busy) writes the
  // program's socket and is held there. Returns what the server sent.
  std::string HoldAWrite(int client, int server) {
    hold_port = LocalPort(client);
    std::string sent;
    bool is_held = false;
    for (int attempt = 0; attempt < 100 && !is_held; ++attempt) {
      const std::string piece = "a" + std::to_string(attempt) + std::string(100, '.');
      EXPECT_TRUE(SendAll(server, piece));
      sent += piece;
      std::unique_lock lock(hold_mutex);
      is_held = hold_changed.wait_for(lock, std::chrono::milliseconds(200), [] { return held; });
    }
    hold_port = 0;
    EXPECT_TRUE(is_held) << "no Data handler wrote the socket in 100 tries";
    return sent;
  }

  static void Release() {
    {
      std::lock_guard lock(hold_mutex);
      released = true;
    }
    hold_changed.notify_all();
  }

  int listener_ = -1;
  std::unique_ptr<Relay> target_, origin_;
  uint16_t carried_ = 0;
  std::vector<int> fds_;
};

TEST_F(RelayHandlerWrite, AHeldSocketWriteHoldsUpNoOtherConnection) {
  const auto [client_a, server_a] = Carry();
  const auto [client_b, server_b] = Carry();
  const std::string to_a = HoldAWrite(client_a, server_a);
  ASSERT_FALSE(HasFatalFailure());

  // While it is held, B's bytes still go through the origin's loop to the server.
  const std::string to_server_b = "b-request";
  ASSERT_TRUE(SendAll(client_b, to_server_b));
  const std::string at_server_b = ReadExactly(server_b, to_server_b.size());
  Release();
  EXPECT_EQ(at_server_b, to_server_b) << "B waited for A's held socket write";

  // Then everything arrives on both, exact and in order.
  const std::string to_b = "b-reply";
  ASSERT_TRUE(SendAll(server_b, to_b));
  EXPECT_EQ(ReadExactly(client_a, to_a.size()), to_a);
  EXPECT_EQ(ReadExactly(client_b, to_b.size()), to_b);
}

// The program resets A while the handler's write to A's socket is held: the relay
// forgets A at once, but A's socket stays open until the write is over, so the
// connection opened meanwhile never gets A's socket number, nor A's bytes.
TEST_F(RelayHandlerWrite, AConnectionClosedUnderAHeldWriteLendsNobodyItsSocket) {
  const auto [client_a, server_a] = Carry();
  (void)HoldAWrite(client_a, server_a);
  ASSERT_FALSE(HasFatalFailure());

  linger hard{1, 0};  // a reset: the origin relay closes its side at once
  setsockopt(client_a, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(client_a);
  fds_.erase(std::find(fds_.begin(), fds_.end(), client_a));
  // The origin passed the reset on: the server's side of A ends.
  char byte;
  for (int reads = 0; reads < 1000 && recv(server_a, &byte, 1, 0) > 0;) ++reads;

  // C's sockets (the test's, the relays') take the lowest free numbers: had A's
  // socket been closed, one of them would have its number, and the held write
  // would put A's bytes into C, one way or the other.
  const auto [client_c, server_c] = Carry();
  Release();
  const std::string to_server_c = "c-request", to_c = "c-reply";
  ASSERT_TRUE(SendAll(client_c, to_server_c));
  EXPECT_EQ(ReadExactly(server_c, to_server_c.size()), to_server_c)
      << "C's server got bytes of another connection";
  ASSERT_TRUE(SendAll(server_c, to_c));
  EXPECT_EQ(ReadExactly(client_c, to_c.size()), to_c) << "C got bytes of another connection";
}

}  // namespace
}  // namespace artune::relay
