// Test support for the relays' stream tests: an echo server on loopback that reads slowly at first
// through a small receive buffer, so the relay's writes to it stop soon and what follows waits in
// the relay's queue.
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

#include "loopback_socket.h"

namespace artune::relay::testing {

// Accepts one connection and echoes it until the peer half-closes: its first 50
// reads take 1000 bytes every 10 ms (an 8 KiB receive buffer, inherited by the
// accepted socket), then reads of `read_bytes` as fast as they come.
class SlowEchoServer {
 public:
  explicit SlowEchoServer(size_t read_bytes) {
    listener_ = ListenLoopback(8 << 10);
    port_ = LocalPort(listener_);
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
