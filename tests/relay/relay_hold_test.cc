// What a socket does not take at once waits in the Data request's own memory
// (Message::Share), not in a copy: two relays in this process carry a large stream
// to an echo server that reads slowly at first, and the bytes come back exact.
// The held memory stays within its bound while the server is slow and is all given
// back at the end; past held_limit the relay copies instead, and stays exact.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "redirect_asker.h"
#include "relay.h"
#include "slow_echo_server.h"

namespace artune::relay {
namespace {

using Bytes = std::vector<std::byte>;

using testing::ConnectLoopback;
using testing::PortOf;
using testing::SetTimeouts;
using testing::SlowEchoServer;

struct EchoRun {
  bool exact = false;
  RelayCounters target;  // the relay beside the server: the client's bytes wait there
  RelayCounters origin;  // the program's side: the echo waits there
  uint64_t target_held_peak = 0;
};

// Echoes `total` random bytes, written 1 MiB at a time, through an origin and a
// target relay (`held_limit` each; window 4 MiB) to a server that reads 1000
// bytes every 10 ms for its first 50 reads through a small receive buffer.
EchoRun RunEcho(uint64_t held_limit, size_t total) {
  EchoRun run;
  SlowEchoServer server(256 << 10);

  RelayOptions target_options;
  target_options.listen = "127.0.0.1:0";
  target_options.window = 4u << 20;
  target_options.held_limit = held_limit;
  auto target = Relay::Start(target_options);
  EXPECT_TRUE(target.ok()) << target.status().ToString();
  const std::string control =
      (std::filesystem::temp_directory_path() / ("relay-hold-" + std::to_string(getpid())))
          .string();
  RelayOptions origin_options = target_options;
  origin_options.listen = "";
  origin_options.relay_port = PortOf((*target)->address());
  origin_options.control_socket = control;
  auto origin = Relay::Start(origin_options);
  EXPECT_TRUE(origin.ok()) << origin.status().ToString();
  if (!target.ok() || !origin.ok()) return run;

  const int client = ConnectLoopback(testing::CarriedPort(control, server.port()));

  std::mt19937 random(22);
  Bytes sent(total);
  for (std::byte& byte : sent) byte = std::byte(static_cast<uint8_t>(random()));
  std::atomic<bool> done{false};
  std::thread watcher([&] {  // the target's held memory while the stream runs
    for (int i = 0; i < 20'000 && !done.load(); ++i) {
      run.target_held_peak = std::max(run.target_held_peak, (*target)->counters().held_bytes);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::thread writer([client, &sent] {
    for (size_t offset = 0; offset < sent.size();) {
      const size_t size = std::min<size_t>(1u << 20, sent.size() - offset);
      const ssize_t wrote = send(client, sent.data() + offset, size, MSG_NOSIGNAL);
      if (wrote <= 0) return;
      offset += static_cast<size_t>(wrote);
    }
    shutdown(client, SHUT_WR);
  });
  Bytes echoed;
  Bytes buffer(1 << 20);
  while (echoed.size() < sent.size()) {
    const ssize_t got = recv(client, buffer.data(), buffer.size(), 0);
    if (got <= 0) break;
    echoed.insert(echoed.end(), buffer.begin(), buffer.begin() + got);
  }
  done = true;
  watcher.join();
  writer.join();
  // Every byte is out of both relays' queues: their held memory is back.
  run.target = (*target)->counters();
  run.origin = (*origin)->counters();
  close(client);
  (*origin)->Shutdown();
  (*target)->Shutdown();
  run.exact = echoed == sent;
  EXPECT_EQ(echoed.size(), sent.size());
  return run;
}

TEST(RelayHold, WhatTheSocketDoesNotTakeWaitsInTheRequestNotACopy) {
  const EchoRun run = RunEcho(RelayOptions{}.held_limit, 24u << 20);
  EXPECT_TRUE(run.exact) << "the echo differs from what was sent";
  // The slow server left bytes waiting at the target (the reason for this test).
  EXPECT_GT(run.target.queued_bytes, 1u << 20);
  EXPECT_EQ(run.target.copied_bytes, 0u);
  EXPECT_EQ(run.origin.copied_bytes, 0u);
  EXPECT_EQ(run.target.held_bytes, 0u);
  EXPECT_EQ(run.origin.held_bytes, 0u);
  EXPECT_GT(run.target_held_peak, 0u);
  // Bounded by the window: the bytes in flight (4 MiB) and a chunk (at most 4 MiB)
  // read past an ack, counted as twice their bytes, plus 256 B per slice.
  EXPECT_LE(run.target_held_peak, 2 * (8u << 20) + (1u << 20));
}

TEST(RelayHold, PastTheHeldLimitTheRestIsCopiedAndStaysExact) {
  const EchoRun run = RunEcho(0, 12u << 20);
  EXPECT_TRUE(run.exact) << "the echo differs from what was sent";
  EXPECT_GT(run.target.queued_bytes, 1u << 20);
  EXPECT_EQ(run.target.copied_bytes, run.target.queued_bytes);
  EXPECT_EQ(run.target.held_bytes, 0u);
  EXPECT_EQ(run.target_held_peak, 0u);
}

}  // namespace
}  // namespace artune::relay
