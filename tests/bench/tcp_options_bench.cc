// Loopback TCP throughput of one stream under the socket options issue 14 asks
// about for the tcp fabric's large sends: the kernel's buffer autotuning (what the
// fabric does), fixed 4 MiB SO_SNDBUF/SO_RCVBUF, and MSG_ZEROCOPY (with the
// completion notifications reaped, as a sender that reuses its buffer must).
// Prints bytes per second and, for MSG_ZEROCOPY, the fraction of sends the kernel
// reported as copied after all (SO_EE_CODE_ZEROCOPY_COPIED).
//
//   build/tests/bench/tcp_options_bench --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//   (one command line)
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace {

enum class Variant { kAutotuned, kFixedBuffers, kZeroCopy };

constexpr int kFixedBufferBytes = 4 << 20;

void Check(bool ok, benchmark::State& state, const char* what) {
  if (!ok) state.SkipWithError((std::string(what) + ": " + std::strerror(errno)).c_str());
}

// A connected loopback pair: {sender, receiver}; both -1 on failure.
std::pair<int, int> LoopbackPair(Variant variant) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (listener >= 0) ::close(listener);
    return {-1, -1};
  }
  const int sender = ::socket(AF_INET, SOCK_STREAM, 0);
  if (variant == Variant::kFixedBuffers) {
    // Set before connect, as the window scale is agreed in the handshake.
    ::setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &kFixedBufferBytes, sizeof(int));
    ::setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &kFixedBufferBytes, sizeof(int));
  }
  if (variant == Variant::kZeroCopy) {
    const int one = 1;
    ::setsockopt(sender, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one));
  }
  const int one = 1;
  ::setsockopt(sender, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(sender, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(sender);
    ::close(listener);
    return {-1, -1};
  }
  const int receiver = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  return {sender, receiver};
}

// Reads zero-copy completions off the error queue; returns how many sends they
// covered and adds those the kernel copied anyway to `copied`.
uint64_t ReapCompletions(int fd, uint64_t& copied) {
  uint64_t done = 0;
  while (true) {
    char control[128];
    msghdr message{};
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    if (::recvmsg(fd, &message, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return done;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      sock_extended_err error{};
      std::memcpy(&error, CMSG_DATA(c), sizeof(error));
      if (error.ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      const uint64_t range = error.ee_data - error.ee_info + 1;  // sends [ee_info, ee_data]
      done += range;
      if (error.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) copied += range;
    }
  }
}

void BM_LoopbackSend(benchmark::State& state, Variant variant) {
  const size_t message_bytes = static_cast<size_t>(state.range(0));
  auto [sender, receiver] = LoopbackPair(variant);
  if (sender < 0 || receiver < 0) {
    Check(false, state, "loopback connection");
    return;
  }
  std::atomic<bool> stop{false};
  // The receiver drains into a buffer of its own, as the fabric receives straight
  // into the destination.
  std::thread drain([receiver = receiver, &stop] {
    std::vector<char> sink(1 << 20);
    while (!stop.load(std::memory_order_relaxed)) {
      if (::recv(receiver, sink.data(), sink.size(), 0) <= 0) return;
    }
  });
  std::vector<char> payload(message_bytes, 'x');
  uint64_t sends = 0, completed = 0, copied = 0;
  const int flags = variant == Variant::kZeroCopy ? MSG_ZEROCOPY : 0;
  for (auto _ : state) {
    size_t sent = 0;
    while (sent < message_bytes) {
      const ssize_t n = ::send(sender, payload.data() + sent, message_bytes - sent, flags);
      if (n < 0 && errno == ENOBUFS) {  // out of optmem for notifications: reap, retry
        completed += ReapCompletions(sender, copied);
        continue;
      }
      if (n <= 0) {
        Check(false, state, "send");
        break;
      }
      sent += static_cast<size_t>(n);
      ++sends;
    }
    if (variant == Variant::kZeroCopy) {
      // The payload may be reused only once every send of it has completed.
      for (int i = 0; i < 10'000 && completed < sends; ++i) {
        pollfd wait{sender, 0, 0};
        ::poll(&wait, 1, 100);  // POLLERR is reported whatever the events asked for
        completed += ReapCompletions(sender, copied);
      }
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message_bytes));
  if (variant == Variant::kZeroCopy && completed > 0) {
    state.counters["copied"] = static_cast<double>(copied) / static_cast<double>(completed);
  }
  stop = true;
  ::shutdown(sender, SHUT_RDWR);
  ::close(sender);
  drain.join();
  ::close(receiver);
}

BENCHMARK_CAPTURE(BM_LoopbackSend, autotuned, Variant::kAutotuned)
    ->Arg(1 << 20)
    ->Arg(6 << 20)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_LoopbackSend, fixed_4MiB_buffers, Variant::kFixedBuffers)
    ->Arg(1 << 20)
    ->Arg(6 << 20)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_LoopbackSend, msg_zerocopy, Variant::kZeroCopy)
    ->Arg(1 << 20)
    ->Arg(6 << 20)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
