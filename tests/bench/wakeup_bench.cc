// The floor under event polling's round trip: two threads that hand a token back
// and forth the way the fabrics' event mode does (each asleep in epoll_wait on its
// own descriptor, woken by the other's write), against the same hand-off by
// spinning on a shared word (busy polling's floor). One iteration is one round
// trip, that is two wake-ups. The threads run on two cores, both on one (where a
// wake-up is a switch on the same core, no inter-processor interrupt), or where
// the scheduler puts them (`free`: where a wake-up's sync hint can move the wakee).
//
// Two doorbells: an eventfd (8-byte write, read), and the shm fabric's AF_UNIX
// stream socketpair (one-byte send, edge-triggered watch, drained by recv; its
// send wakes with the scheduler's sync hint, WF_SYNC). `same_cpu_pct` counts the
// round trips whose two threads answered on one CPU.
//
//   build/tests/bench/wakeup_bench --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//   (one command line)
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Round trips are timed one by one: the p50 is what the side-by-side's RTT rows
// show; the mean (Google Benchmark's time) carries the scheduler's long tail.
class RoundTrips {
 public:
  // Times one_round_trip once per iteration of the benchmark, then reports.
  template <typename RoundTrip>
  void Run(benchmark::State& state, bool placed, RoundTrip one_round_trip) {
    if (placed) {
      for (auto _ : state) {
        const Clock::time_point started = Clock::now();
        one_round_trip();
        micros_.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - started).count());
      }
    }
    Report(state);
  }

 private:
  void Report(benchmark::State& state) {
    if (micros_.empty()) return;
    std::sort(micros_.begin(), micros_.end());
    state.counters["p50_us"] = micros_[micros_.size() / 2];
    state.counters["p90_us"] = micros_[micros_.size() * 9 / 10];
  }

  using Clock = std::chrono::steady_clock;
  std::vector<double> micros_;
};

enum class Placement { kTwoCores, kOneCore, kFree };

bool Pin(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(thread, sizeof(set), &set) == 0;
}

// This thread's own affinity back to every core when the benchmark ends.
class ScopedPinning {
 public:
  ScopedPinning() { ::pthread_getaffinity_np(::pthread_self(), sizeof(saved_), &saved_); }
  ~ScopedPinning() { ::pthread_setaffinity_np(::pthread_self(), sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_{};
};

enum class Doorbell { kEventfd, kSocketpair };

// One side of the event hand-off: a descriptor in an epoll set of its own, as each
// fabric's progress pass sleeps on its doorbells. For the socketpair, this side
// watches ends_[0] and is rung through ends_[1], as shm_doorbell.cc does.
class Sleeper {
 public:
  explicit Sleeper(Doorbell kind) : kind_(kind), epoll_(::epoll_create1(0)) {
    if (kind == Doorbell::kEventfd) {
      ends_[0] = ends_[1] = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    } else if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends_) != 0) {
      ends_[0] = ends_[1] = -1;
    }
    epoll_event event{};
    event.events = kind == Doorbell::kEventfd ? EPOLLIN : EPOLLIN | EPOLLET;
    ok_ = ends_[0] >= 0 && epoll_ >= 0 && ::epoll_ctl(epoll_, EPOLL_CTL_ADD, ends_[0], &event) == 0;
  }
  ~Sleeper() {
    if (epoll_ >= 0) ::close(epoll_);
    if (ends_[0] >= 0) ::close(ends_[0]);
    if (ends_[1] >= 0 && ends_[1] != ends_[0]) ::close(ends_[1]);
  }
  bool ok() const { return ok_; }
  void Wake() {
    if (kind_ == Doorbell::kEventfd) {
      const uint64_t one = 1;
      (void)!::write(ends_[1], &one, sizeof(one));
    } else {
      const char ring = 1;
      (void)!::send(ends_[1], &ring, sizeof(ring), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
  }
  // Sleeps until woken (or 1 s passed: a lost wake-up shows as a slow figure,
  // never a hang); false when it timed out.
  bool Sleep() {
    epoll_event event{};
    int n = 0;
    do {
      n = ::epoll_wait(epoll_, &event, 1, 1000);
    } while (n < 0 && errno == EINTR);
    if (kind_ == Doorbell::kEventfd) {
      uint64_t value = 0;
      (void)!::read(ends_[0], &value, sizeof(value));
    } else {
      char rings[256];
      (void)!::recv(ends_[0], rings, sizeof(rings), MSG_DONTWAIT);
    }
    return n == 1;
  }

 private:
  Doorbell kind_;
  int ends_[2] = {-1, -1};
  int epoll_;
  bool ok_ = false;
};

bool PlaceThreads(benchmark::State& state, Placement placement, std::thread& peer) {
  if (placement == Placement::kFree) return true;
  const int peer_cpu = placement == Placement::kTwoCores ? 1 : 0;
  if (placement == Placement::kTwoCores && std::thread::hardware_concurrency() < 2) {
    state.SkipWithError("one core only");
    return false;
  }
  if (!Pin(::pthread_self(), 0) || !Pin(peer.native_handle(), peer_cpu)) {
    state.SkipWithError((std::string("pthread_setaffinity_np: ") + std::strerror(errno)).c_str());
    return false;
  }
  return true;
}

void BM_WakeupRoundTrip(benchmark::State& state, Doorbell kind, Placement placement) {
  ScopedPinning restore;
  Sleeper here(kind);
  Sleeper there(kind);
  if (!here.ok() || !there.ok()) {
    state.SkipWithError("eventfd/socketpair/epoll_create1 failed");
    return;
  }
  std::atomic<bool> stop{false};
  std::atomic<int> peer_cpu{-1};
  // The peer answers every wake-up until told to stop.
  std::thread peer([&] {
    while (!stop.load(std::memory_order_acquire)) {
      if (there.Sleep() && !stop.load(std::memory_order_acquire)) {
        peer_cpu.store(::sched_getcpu(), std::memory_order_relaxed);
        here.Wake();
      }
    }
  });
  const bool placed = PlaceThreads(state, placement, peer);
  int64_t timeouts = 0;
  int64_t same_cpu = 0;
  int64_t round_trips = 0;
  RoundTrips().Run(state, placed, [&] {
    there.Wake();
    if (!here.Sleep()) ++timeouts;
    same_cpu += peer_cpu.load(std::memory_order_relaxed) == ::sched_getcpu();
    ++round_trips;
  });
  stop.store(true, std::memory_order_release);
  there.Wake();
  peer.join();
  state.counters["lost_wakeups"] = static_cast<double>(timeouts);
  if (round_trips > 0) {
    state.counters["same_cpu_pct"] = 100.0 * static_cast<double>(same_cpu) / round_trips;
  }
}

void BM_SpinRoundTrip(benchmark::State& state, Placement placement) {
  ScopedPinning restore;
  // The token: odd means the peer's turn, even ours; UINT64_MAX stops the peer.
  alignas(64) std::atomic<uint64_t> token{0};
  std::thread peer([&] {
    uint64_t seen = 0;
    while (true) {
      const uint64_t value = token.load(std::memory_order_acquire);
      if (value == UINT64_MAX) return;
      if (value != seen && (value & 1) == 1) {
        seen = value + 1;
        token.store(seen, std::memory_order_release);
      } else if (placement == Placement::kOneCore) {
        sched_yield();  // on one core a spinner must let the other side run
      }
    }
  });
  const bool placed = PlaceThreads(state, placement, peer);
  uint64_t value = 0;
  RoundTrips().Run(state, placed, [&] {
    token.store(++value, std::memory_order_release);
    ++value;
    while (token.load(std::memory_order_acquire) != value) {
      if (placement == Placement::kOneCore) sched_yield();
    }
  });
  token.store(UINT64_MAX, std::memory_order_release);
  peer.join();
}

BENCHMARK_CAPTURE(BM_WakeupRoundTrip, eventfd_two_cores, Doorbell::kEventfd, Placement::kTwoCores)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WakeupRoundTrip, eventfd_one_core, Doorbell::kEventfd, Placement::kOneCore)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WakeupRoundTrip, eventfd_free, Doorbell::kEventfd, Placement::kFree)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WakeupRoundTrip, socketpair_two_cores, Doorbell::kSocketpair,
                  Placement::kTwoCores)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WakeupRoundTrip, socketpair_one_core, Doorbell::kSocketpair,
                  Placement::kOneCore)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WakeupRoundTrip, socketpair_free, Doorbell::kSocketpair, Placement::kFree)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SpinRoundTrip, two_cores, Placement::kTwoCores)->UseRealTime();
BENCHMARK_CAPTURE(BM_SpinRoundTrip, one_core, Placement::kOneCore)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
