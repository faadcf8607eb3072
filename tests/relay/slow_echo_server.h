// Test support for the relays' stream tests: bounded socket timeouts, and an echo
// server on loopback that reads slowly at first through a small receive buffer, so
// the relay's writes to it stop soon and what follows waits in the relay's queue.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace artune::relay::testing {

// Bounds every blocking call on `fd` at 20 s: a relay that never answers fails the
// test instead of hanging it.
inline void SetTimeouts(int fd) {
  timeval wait{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
}

inline uint16_t PortOf(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// Accepts one connection and echoes it until the peer half-closes: its first 50
// reads take 1000 bytes every 10 ms (an 8 KiB receive buffer, inherited by the
// accepted socket), then reads of `read_bytes` as fast as they come.
class SlowEchoServer {
 public:
  explicit SlowEchoServer(size_t read_bytes) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int small = 8 << 10;
    setsockopt(listener_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(listener_, 4), 0);
    EXPECT_EQ(getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
    SetTimeouts(listener_);  // bounds the accept
    thread_ = std::thread([this, read_bytes] { Serve(read_bytes); });
  }
  // Ends a wait for a connection that never came (a test that gave up before
  // connecting), then joins the server: a connection it took is echoed until the
  // client closes it (or for at most the 20 s timeout of a silent client).
  ~SlowEchoServer() {
    shutdown(listener_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(listener_);
  }
  SlowEchoServer(const SlowEchoServer&) = delete;
  SlowEchoServer& operator=(const SlowEchoServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  void Serve(size_t read_bytes) {
    const int fd = accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    SetTimeouts(fd);
    std::vector<std::byte> buffer(read_bytes);
    for (int reads = 0; reads < 100'000; ++reads) {
      const bool slow = reads < 50;
      if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const ssize_t got = recv(fd, buffer.data(), slow ? 1000 : buffer.size(), 0);
      if (got <= 0) break;
      if (send(fd, buffer.data(), static_cast<size_t>(got), MSG_NOSIGNAL) != got) break;
    }
    shutdown(fd, SHUT_WR);
    close(fd);
  }

  int listener_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace artune::relay::testing
