// Caller-driven progress (fabric.h), the part every fabric shares: which callers
// drive progress, and the parking of the fabric's own thread while they do. Each
// fabric keeps its pass and its wake-up (an eventfd write under its shutdown
// lock); this keeps the count, the sleeping flag and the park.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "fabric/fabric.h"

namespace artune::transport::fabric {

class CallerPollingGate {
 public:
  using Clock = std::chrono::steady_clock;

  // A caller starts driving progress. True when the progress thread sleeps in
  // its wait holding the pass: the fabric must wake it, so that it sees the
  // caller and parks instead of taking the caller's completions from under it.
  bool Begin() {
    // seq_cst, paired with EnterSleep: either this sees the thread asleep, or
    // the thread sees this caller before it sleeps.
    callers_.fetch_add(1, std::memory_order_seq_cst);
    return sleeping_.load(std::memory_order_seq_cst);
  }
  // A caller stops (Fabric::EndCallerPolling): only one that leaves before its
  // completion (hand_over) wakes the parked thread; the others let it notice
  // within kParkRecheck, so a loop of calls pays no wake-up per call.
  void End(bool hand_over) {
    if (callers_.fetch_sub(1, std::memory_order_acq_rel) == 1 && hand_over) {
      std::lock_guard park(park_mutex_);
      park_changed_.notify_one();
    }
  }
  bool callers_polling() const { return callers_.load(std::memory_order_acquire) > 0; }

  // The progress thread, about to sleep in its wait with the pass held. False
  // when a caller has begun meanwhile: the thread must not sleep then (it would
  // hold the pass from that caller, whose Begin may have seen no sleeper and
  // woken nobody); it passes without waiting and parks.
  bool EnterSleep() {
    sleeping_.store(true, std::memory_order_seq_cst);
    return callers_.load(std::memory_order_seq_cst) == 0;
  }
  // Back from the wait (or from an EnterSleep that said no).
  void LeaveSleep() { sleeping_.store(false, std::memory_order_relaxed); }

  // The progress thread stands aside while callers poll: waits until they have
  // all left, `stopping` is set or kParkRecheck passed. Returns true when callers
  // still poll and kParkedPassEvery has passed since `last_pass` (then updated):
  // the thread runs a pass of its own (deadlines, accepts, failures to finish
  // while the callers are busy elsewhere).
  //
  // While callers keep polling, each recheck that finds them still there doubles
  // the next wait, up to kParkRecheckLongest; finding none starts over at
  // kParkRecheck. A parked thread's wake-up is not free: a timer interrupt, a
  // context switch and clock reads, taking a core from the polling caller or the
  // peer on a small host (in the Soft-RoCE lab, where a clock read is a syscall,
  // rechecking every 200 us made the parked thread 15% of a busy client's CPU
  // samples; bench/verbs.md). The clock is read only when a pass may be due.
  bool Park(const std::atomic<bool>& stopping, Clock::time_point& last_pass) {
    {
      std::unique_lock park(park_mutex_);
      park_changed_.wait_for(park, recheck_, [&] {
        return !callers_polling() || stopping.load(std::memory_order_relaxed);
      });
    }
    if (!callers_polling()) {
      recheck_ = kParkRecheck;
      return false;
    }
    waited_ += recheck_;
    recheck_ = std::min(recheck_ * 2, kParkRecheckLongest);
    if (waited_ < kParkedPassEvery) return false;
    waited_ = Clock::duration::zero();
    const Clock::time_point now = Clock::now();
    if (now - last_pass < kParkedPassEvery) return false;
    last_pass = now;
    return true;
  }

  // Shutdown: a parked thread looks at `stopping` at once.
  void WakeParked() {
    std::lock_guard park(park_mutex_);
    park_changed_.notify_all();
  }

 private:
  std::atomic<int> callers_{0};
  std::atomic<bool> sleeping_{false};
  // The progress thread's own (Park): its next recheck wait, and how long it
  // has waited parked since its last look at the clock for a pass.
  std::chrono::microseconds recheck_ = kParkRecheck;
  Clock::duration waited_ = Clock::duration::zero();
  std::mutex park_mutex_;
  std::condition_variable park_changed_;
};

}  // namespace artune::transport::fabric
