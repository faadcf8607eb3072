// What every fabric with a progress thread does alike (fabric.h): the live
// polling knobs, the wake-up eventfd, the progress thread's start and stop,
// caller-driven progress (caller_polling.h: the callers' gate, the try-lock of
// the pass, the rule against nested passes) and the order of Shutdown. Each
// fabric (shm/, tcp/, verbs/) keeps what differs: its pass, its progress loop,
// its endpoints and what its Shutdown tears down.
//
// Threading: as fabric.h. A pass, the progress thread's or a caller's, holds
// progress_mutex_; "progress thread only" in a fabric means "in a pass".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "fabric/caller_polling.h"
#include "fabric/fabric.h"
#include "fabric/spin_governor.h"

namespace artune::transport::fabric {

class ProgressFabric;

namespace pass_internal {
// The kinds of fabric whose pass the calling thread runs (a bit per FabricKind),
// and the innermost such fabric (ProgressFabric::PassScope). In the header so
// that a pass's scope costs two stores, not calls into another file.
inline thread_local unsigned kinds_in_pass = 0;
inline thread_local const ProgressFabric* fabric_in_pass = nullptr;
inline unsigned KindBit(FabricKind kind) { return 1u << static_cast<unsigned>(kind); }
}  // namespace pass_internal

class ProgressFabric : public Fabric {
 public:
  using Clock = std::chrono::steady_clock;

  // Closes the wake-up eventfd: endpoints may call Wake from any thread until the
  // fabric is gone, Shutdown included. A derived destructor calls Shutdown first.
  ~ProgressFabric() override;

  FabricKind kind() const final { return kind_; }
  // Any thread; the progress thread takes the change at its next pass (a
  // sleeping one is woken).
  void SetPolling(PollingMode mode) final;
  void SetPollSpin(uint32_t spin_us) final;
  // Stops the progress thread (and the fabric's others: StopOtherThreads), then
  // tears down under progress_mutex_ (TearDownLocked). Idempotent.
  void Shutdown() final;

  bool caller_polling() const final { return true; }
  void BeginCallerPolling() final;
  void EndCallerPolling(bool hand_over) final { caller_gate_.End(hand_over); }
  // Each fabric's Poll is TryCallerPass around its own non-blocking pass (inline:
  // no call more per pass than a fabric of its own would make).
  // The try-lock and the checks of Poll, plus `finished`, then WaitPassLocked.
  bool WaitPass(int timeout_ms, const std::atomic<bool>& finished) final;

  // True on a thread running one of this fabric's passes (a completion handler):
  // what it queues is seen before the pass ends, no wake-up needed.
  bool InPassOnThisThread() const { return pass_internal::fabric_in_pass == this; }
  // Wakes the progress thread (a sleeping one looks again). Any thread.
  void Wake();
  // The polling mode now (SetPolling changes it; the config's is the first).
  PollingMode polling() const { return polling_.load(std::memory_order_relaxed); }

 protected:
  ProgressFabric(FabricKind kind, PollingMode polling, uint32_t poll_spin_us);

  // Marks the calling thread as running a pass of `fabric` for its lifetime: a
  // completion handler that waits for a call of its own must not run a nested
  // pass of a fabric of the same kind (std::mutex is not recursive).
  class PassScope {
   public:
    explicit PassScope(const ProgressFabric& fabric)
        : previous_kinds_(pass_internal::kinds_in_pass),
          previous_fabric_(pass_internal::fabric_in_pass) {
      pass_internal::kinds_in_pass |= pass_internal::KindBit(fabric.kind_);
      pass_internal::fabric_in_pass = &fabric;
    }
    ~PassScope() {
      pass_internal::kinds_in_pass = previous_kinds_;
      pass_internal::fabric_in_pass = previous_fabric_;
    }
    PassScope(const PassScope&) = delete;
    PassScope& operator=(const PassScope&) = delete;

   private:
    unsigned previous_kinds_;
    const ProgressFabric* previous_fabric_;
  };

  // Init's part: the wake-up eventfd, and for epoll-driven fabrics an epoll set
  // watching it under `wake_tag` (epoll_event.data.u64). `fabric` names the
  // fabric in errors ("shm").
  Status OpenWakeFd(std::string_view fabric);
  Result<int> OpenEpollWithWake(std::string_view fabric, uint64_t wake_tag);
  // Init's last step: starts the thread that runs ProgressLoop.
  void StartProgressThread() {
    progress_ = std::thread([this] { ProgressLoop(); });
  }
  // Empties the wake-up eventfd (the progress thread, after a wake-up).
  void DrainWake();
  // TearDownLocked's first step: tears down every endpoint of `endpoints` (a map
  // to shared_ptr guarded by `mutex`), with "the transport is shutting down".
  // Outside the lock: an endpoint's Teardown calls back into the fabric.
  template <class Endpoints>
  static void TearDownEndpoints(std::mutex& mutex, const Endpoints& endpoints) {
    std::vector<typename Endpoints::mapped_type> remaining;
    {
      std::lock_guard lock(mutex);
      for (const auto& [key, endpoint] : endpoints) remaining.push_back(endpoint);
    }
    for (const auto& endpoint : remaining) {
      endpoint->Teardown(Status::Cancelled("the transport is shutting down"));
    }
  }

  std::chrono::microseconds poll_spin() const {
    return std::chrono::microseconds(poll_spin_us_.load(std::memory_order_relaxed));
  }
  // The top of a progress-thread pass in `mode`: busy spins, event does not,
  // adaptive spins while there was activity within poll_spin_us and the host lets
  // it (spin_governor.h).
  bool SpinsThisPass(PollingMode mode, Clock::time_point last_activity, SpinWatch& watch) const {
    if (mode == PollingMode::kAdaptive) return watch.AdaptiveSpins(last_activity, poll_spin());
    watch.Reset();
    return mode == PollingMode::kBusy;
  }

  enum class CallerPass { kNotRun, kIdle, kProgressed };
  // Poll's body: kNotRun when another thread holds the pass, this thread is in a
  // pass of a fabric of this kind already or the fabric stops; else whether
  // `pass` (the fabric's non-blocking pass, run with progress_mutex_ held)
  // completed anything.
  template <class Pass>
  CallerPass TryCallerPass(Pass pass) {
    if ((pass_internal::kinds_in_pass & pass_internal::KindBit(kind_)) != 0) {
      return CallerPass::kNotRun;
    }
    std::unique_lock lock(progress_mutex_, std::try_to_lock);
    if (!lock.owns_lock() || stopping_.load(std::memory_order_relaxed)) return CallerPass::kNotRun;
    return pass() ? CallerPass::kProgressed : CallerPass::kIdle;
  }

  // The fabric's own parts.
  virtual void ProgressLoop() = 0;
  // WaitPass's pass (fabric.h): may sleep up to timeout_ms. Requires
  // progress_mutex_. Only fabrics whose caller_waiting() is true are asked.
  virtual bool WaitPassLocked(int /*timeout_ms*/, const std::atomic<bool>& /*finished*/) {
    return false;
  }
  // Shutdown, once the progress thread is joined: joins the fabric's other threads.
  virtual void StopOtherThreads() {}
  // Shutdown, last: no thread runs a pass any more and none will (progress_mutex_
  // held, stopping_ set): tears the endpoints down and closes the fabric's own
  // descriptors (not the wake-up eventfd).
  virtual void TearDownLocked() = 0;

  // Held for a pass by the progress thread or a polling caller.
  std::mutex progress_mutex_;
  // Callers between Begin/EndCallerPolling, and the park of the progress thread
  // while there are any (caller_polling.h).
  CallerPollingGate caller_gate_;
  std::atomic<bool> stopping_{false};
  int wake_fd_ = -1;

 private:
  const FabricKind kind_;
  std::atomic<PollingMode> polling_;
  std::atomic<uint32_t> poll_spin_us_;
  std::thread progress_;
  // Shutdown's, and what may not run after it: the wake-ups of SetPolling and
  // BeginCallerPolling.
  std::mutex shutdown_mutex_;
  bool shut_down_ = false;
};

}  // namespace artune::transport::fabric
