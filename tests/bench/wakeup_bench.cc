// The floor under event polling's round trip: two threads that hand a token back
// and forth the way the fabrics' event mode does (each asleep in epoll_wait on its
// own eventfd, woken by the other's write), against the same hand-off by spinning
// on a shared word (busy polling's floor). One iteration is one round trip, that
// is two wake-ups. The threads run on two cores, or both on one (where a wake-up
// is a switch on the same core, no inter-processor interrupt).
//
//   build/tests/bench/wakeup_bench --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//   (one command line)
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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

enum class Placement { kTwoCores, kOneCore };

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

// One side of the event hand-off: an eventfd in an epoll set of its own, as each
// fabric's progress pass sleeps on its eventfds.
class Sleeper {
 public:
  Sleeper() : wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), epoll_(::epoll_create1(0)) {
    epoll_event event{};
    event.events = EPOLLIN;
    ok_ = wake_ >= 0 && epoll_ >= 0 && ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &event) == 0;
  }
  ~Sleeper() {
    for (int fd : {wake_, epoll_}) {
      if (fd >= 0) ::close(fd);
    }
  }
  bool ok() const { return ok_; }
  void Wake() {
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof(one));
  }
  // Sleeps until woken (or 1 s passed: a lost wake-up shows as a slow figure,
  // never a hang); false when it timed out.
  bool Sleep() {
    epoll_event event{};
    int n = 0;
    do {
      n = ::epoll_wait(epoll_, &event, 1, 1000);
    } while (n < 0 && errno == EINTR);
    uint64_t value = 0;
    (void)!::read(wake_, &value, sizeof(value));
    return n == 1;
  }

 private:
  int wake_;
  int epoll_;
  bool ok_ = false;
};

bool PlaceThreads(benchmark::State& state, Placement placement, std::thread& peer) {
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

void BM_EventfdRoundTrip(benchmark::State& state, Placement placement) {
  ScopedPinning restore;
  Sleeper here;
  Sleeper there;
  if (!here.ok() || !there.ok()) {
    state.SkipWithError("eventfd/epoll_create1 failed");
    return;
  }
  std::atomic<bool> stop{false};
  // The peer answers every wake-up until told to stop.
  std::thread peer([&] {
    while (!stop.load(std::memory_order_acquire)) {
      if (there.Sleep() && !stop.load(std::memory_order_acquire)) here.Wake();
    }
  });
  const bool placed = PlaceThreads(state, placement, peer);
  int64_t timeouts = 0;
  RoundTrips().Run(state, placed, [&] {
    there.Wake();
    if (!here.Sleep()) ++timeouts;
  });
  stop.store(true, std::memory_order_release);
  there.Wake();
  peer.join();
  state.counters["lost_wakeups"] = static_cast<double>(timeouts);
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

BENCHMARK_CAPTURE(BM_EventfdRoundTrip, two_cores, Placement::kTwoCores)->UseRealTime();
BENCHMARK_CAPTURE(BM_EventfdRoundTrip, one_core, Placement::kOneCore)->UseRealTime();
BENCHMARK_CAPTURE(BM_SpinRoundTrip, two_cores, Placement::kTwoCores)->UseRealTime();
BENCHMARK_CAPTURE(BM_SpinRoundTrip, one_core, Placement::kOneCore)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
