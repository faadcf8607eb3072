// Adaptive polling's guard for busy hosts: spin only while spinning keeps the core.
//
// Spinning pays when the thread that spins owns a core and the thread it waits for
// (the peer, a handler) runs on another. On a host whose cores are all busy (a
// training host: input pipelines, the framework's own threads) neither holds: the
// spinner burns its time slice while the thread it waits for sits in the run
// queue, and every hand-off waits for the scheduler, a millisecond or more.
// Measured on Linux 6.18 (EEVDF), one CPU hog per core, 100 B calls over shm:
// adaptive fell to 156-317 calls/s (p50 2.3-3.9 ms) in most rounds while event
// polling kept 8-35 k/s. Worse, the spin loops' sched_yield(), which helps when two
// threads share one core and nothing else runs, makes EEVDF push the yielder's
// virtual deadline a slice later on every call: a thread yielding in a loop queues
// behind every hog for seconds (its run delay was 2.3-2.8 s per 2 s of wall time).
//
// So adaptive spins only while the host has room for it. Two signals, either of
// which starts a back-off: every kSampleEvery a spinner reads the kernel's count
// of runnable threads (/proc/loadavg) and finds more than the CPUs this process may
// use, itself not counted, at two samples in a row (someone is waiting for a core: spinning takes
// one from it, and a thread that used more than its share is woken later by a fair scheduler); and
// a spinning thread watches its own clock: a gap between two reads of its spin longer than
// kLostCpuGap means the kernel ran something else on its core meanwhile (a passing interrupt costs
// microseconds; losing the core to another runnable thread costs at least one scheduler slice, 0.75
// ms and up). It reports that here, and for a back-off period every adaptive waiter of the process
// sleeps as event polling does (a blocked thread wakes when its completion arrives, and the
// scheduler favours a thread that slept over one that used its share). The period
// starts at kMinBackOff and doubles, up to kMaxBackOff, while spins keep losing their
// core soon after each period ends; a spin that keeps its core through a whole
// period resets it. On an idle host no spin loses its core and nothing changes.
//
// Busy polling never sleeps for the governor (it is for hosts that dedicate cores
// to it); it only asks it how eagerly to yield (IdleYield).
//
// Threading: all methods may be called from any thread at any time; the state is
// one process-wide instance (the cores are the host's, not one fabric's).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace artune::transport::fabric {

class SpinGovernor {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr std::chrono::microseconds kLostCpuGap{500};
  static constexpr std::chrono::milliseconds kMinBackOff{20};
  static constexpr std::chrono::milliseconds kMaxBackOff{1000};
  // How often spinners look at the host's run queues (a read of /proc/loadavg,
  // a few microseconds).
  static constexpr std::chrono::milliseconds kSampleEvery{10};
  // Consecutive samples that must find the host oversubscribed.
  static constexpr int kBusySamples = 2;

  // The process's governor.
  static SpinGovernor& Process();

  // Whether an adaptive waiter may spin at `now`: false during a back-off. Every
  // kSampleEvery one caller also looks at the host (HostIsOversubscribed) and
  // starts a back-off when it is.
  bool MaySpin(Clock::time_point now) {
    const Clock::rep at = now.time_since_epoch().count();
    if (at < resume_at_.load(std::memory_order_relaxed)) return false;
    Clock::rep sampled = sampled_at_.load(std::memory_order_relaxed);
    if (at - sampled < kSampleEveryRep ||
        !sampled_at_.compare_exchange_strong(sampled, at, std::memory_order_relaxed)) {
      return true;
    }
    // Two samples in a row: a thread that is runnable for a moment (a timer, a
    // logger) is no reason to stop spinning; hogs are there at every sample.
    if (!host_is_oversubscribed_.load(std::memory_order_relaxed)()) {
      busy_samples_.store(0, std::memory_order_relaxed);
      return true;
    }
    if (busy_samples_.fetch_add(1, std::memory_order_relaxed) + 1 < kBusySamples) return true;
    LostCpu(now);
    return false;
  }

  // The host check (tests put their own): true when more threads are runnable than
  // this process may use CPUs, not counting the caller itself.
  using HostCheck = bool (*)();
  static bool HostIsOversubscribed();
  void SetHostCheckForTesting(HostCheck check) { host_is_oversubscribed_.store(check); }

  // A spinning thread lost its core at `now`: start (or lengthen) a back-off.
  void LostCpu(Clock::time_point now);

  // Back-offs started since the process began (for tests and stats).
  uint64_t back_offs() const { return back_offs_.load(std::memory_order_relaxed); }

  // Tests: forget every back-off.
  void ResetForTesting();

 private:
  static constexpr Clock::rep kSampleEveryRep =
      std::chrono::duration_cast<Clock::duration>(kSampleEvery).count();
  std::atomic<HostCheck> host_is_oversubscribed_{&HostIsOversubscribed};
  std::atomic<Clock::rep> sampled_at_{0};
  std::atomic<int> busy_samples_{0};
  std::atomic<Clock::rep> resume_at_{0};
  std::atomic<Clock::rep> back_off_{0};  // the current period's length
  std::atomic<uint64_t> back_offs_{0};
};

// One spinning thread's view of its clock: feed it every clock read the spin makes
// (Observe), and Reset when the spin ends or the thread sleeps, so that time spent
// asleep is not taken for a lost core.
class SpinWatch {
 public:
  using Clock = SpinGovernor::Clock;

  // True when the previous read of this spin is longer than kLostCpuGap ago: the
  // governor has been told, and the caller should stop spinning.
  bool Observe(Clock::time_point now) {
    const Clock::time_point previous = last_;
    last_ = now;
    if (previous == Clock::time_point{} || now - previous < SpinGovernor::kLostCpuGap) return false;
    SpinGovernor::Process().LostCpu(now);
    return true;
  }
  void Reset() { last_ = Clock::time_point{}; }

  // Adaptive polling's choice for a progress thread at the top of a pass (it reads
  // the clock): spin while there was activity within `spin`, the governor allows it
  // and the spin has not just lost its core; else the thread sleeps this pass.
  bool AdaptiveSpins(Clock::time_point last_activity, std::chrono::microseconds spin) {
    const Clock::time_point now = Clock::now();
    if (now - last_activity < spin && SpinGovernor::Process().MaySpin(now) && !Observe(now)) {
      return true;
    }
    Reset();
    return false;
  }

 private:
  Clock::time_point last_{};
};

// Busy polling's courtesy to a thread that may share the spinner's core (the
// peer, a handler, on a host with fewer free cores than spinning threads): a spin
// that has found nothing for kIdlePassesPerYield passes in a row asks the
// governor whether the host has room (one clock read per idle spell). If not, it
// yields on every idle pass from there, as it always did: a hand-off to a thread
// on the same core then waits microseconds, not a scheduler slice. If the host has
// room, the thread it waits for runs on a core of its own (what busy polling is
// for), and a yield is only a system call in the way of the reply (several per
// 100 B round trip: bench/side-by-side.md, 2026-11-28 03:05): the spin yields
// once per kIdlePassesPerYield passes only after kIdlePassesBeforeYield of them.
//
// Threading: one per spinning thread (not shared).
class IdleYield {
 public:
  static constexpr uint32_t kIdlePassesPerYield = 64;
  static constexpr uint32_t kIdlePassesBeforeYield = 1024;

  // After every pass of the spin: `progressed` when it moved anything.
  void AfterPass(bool progressed) {
    if (progressed) {
      idle_passes_ = 0;
      return;
    }
    // Wraps after 2^32 idle passes: the spell starts over, harmless.
    ++idle_passes_;
    if (idle_passes_ < kIdlePassesPerYield) return;
    if (idle_passes_ == kIdlePassesPerYield) host_has_room_ = HostHasRoom();
    if (!host_has_room_ ||
        (idle_passes_ >= kIdlePassesBeforeYield && idle_passes_ % kIdlePassesPerYield == 0)) {
      YieldCore();
    }
  }

 private:
  static bool HostHasRoom();
  static void YieldCore();
  uint32_t idle_passes_ = 0;
  bool host_has_room_ = true;
};

// sched_yield calls IdleYield made in this process (tests, and the cost of a spin).
uint64_t IdleYields();

}  // namespace artune::transport::fabric
