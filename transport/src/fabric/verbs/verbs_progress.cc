// The verbs fabric's completion progress: one pass over every endpoint's CQ, the
// progress thread's loop (busy, event or adaptive polling; parked while callers
// drive progress) and the caller-driven passes (fabric.h). Setup and shutdown are
// in verbs_fabric.cc.
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "fabric/spin_governor.h"
#include "fabric/verbs/verbs_fabric.h"
#include "fabric/verbs/verbs_util.h"
#include "thread_name.h"

namespace artune::transport::fabric::verbs {
namespace {

// Spinning: idle passes before the progress thread yields its core each pass (on
// a host with few cores the caller and the handlers need them; under TCG so does
// rxe's own packet processing).
constexpr uint32_t kSpinsBeforeYield = 64;
// Adaptive: spinning passes per look at the clock (ProgressLoop).
constexpr uint32_t kPassesPerClockRead = 16;

}  // namespace

bool VerbsFabric::ProgressAllLocked(bool arm) {
  {
    std::lock_guard lock(endpoints_mutex_);
    if (snapshot_version_ != endpoints_version_) {
      snapshot_.clear();
      for (auto& [id, endpoint] : endpoints_) snapshot_.push_back(endpoint);
      snapshot_version_ = endpoints_version_;
    }
  }
  const PassScope pass(*this);
  bool progressed = false;
  for (const auto& endpoint : snapshot_) {
    const VerbsEndpoint::PassResult pass = endpoint->Progress(arm);
    progressed |= pass.progressed;
    if (!pass.finished) continue;
    // kDisconnected delivered: forget and release it here, in the pass.
    {
      std::lock_guard lock(endpoints_mutex_);
      endpoints_.erase(endpoint->cm_id());
      ++endpoints_version_;
    }
    endpoint->Release();
  }
  return progressed;
}

void VerbsFabric::SleepForEvents() {
  pollfd fds[2] = {{comp_channel_->fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  // A caller that begins polling meanwhile polls the CQs itself; the thread, woken
  // by the next completion event, then finds it and parks.
  const int ready = ::poll(fds, 2, caller_gate_.EnterSleep() ? -1 : 0);
  caller_gate_.LeaveSleep();
  if (ready < 0) return;  // EINTR: the next pass looks anyway
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(comp_channel_, &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
  DrainWake();
}

void VerbsFabric::ProgressLoop() {
  NameThisThread("artune-verbs");
  auto last_activity = Clock::now();
  auto last_parked_pass = last_activity;
  // Sleeping is safe only once every CQ is armed: the pass before a sleep arms them
  // and polls, and `armed` says the thread's last pass did (arming stays in force
  // whoever polls the CQ afterwards).
  bool armed = false;
  uint32_t idle_passes = 0;
  // Adaptive's clock: read once every kPassesPerClockRead spinning passes, not on
  // every one; activity seen in between dates from the next read. A spin thus runs
  // up to that many passes past poll_spin_us. Busy and event never read it. (In
  // the lab's guest every clock read is a syscall and an emulated HPET access:
  // reading it on every pass took 30% of an adaptive server's progress thread.)
  bool was_spinning = false;
  bool activity_unclocked = false;
  SpinWatch spin_watch;
  uint32_t passes_unclocked = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Read on every pass: SetPolling may switch it while the thread runs. Adaptive
    // spins while there was a completion within poll_spin_us, then sleeps.
    const PollingMode mode = polling();
    bool spinning = mode == PollingMode::kBusy;
    if (mode == PollingMode::kAdaptive) {
      if (was_spinning && ++passes_unclocked < kPassesPerClockRead) {
        spinning = true;
      } else {
        const auto now = Clock::now();
        passes_unclocked = 0;
        if (activity_unclocked) {
          last_activity = now;
          spin_watch.Reset();  // those passes' time was work, not a lost core
        }
        activity_unclocked = false;
        // The host lets it (fabric/spin_governor.h), and this spin kept its core.
        spinning = now - last_activity < poll_spin() && SpinGovernor::Process().MaySpin(now) &&
                   !spin_watch.Observe(now);
        if (!spinning) spin_watch.Reset();
      }
    } else {
      spin_watch.Reset();
    }
    was_spinning = spinning;
    if (spinning && caller_gate_.callers_polling()) {
      // A caller drives progress: stand aside rather than spin against it. A pass
      // of its own now and then lets accepted connections start and failures
      // finish while the caller polls elsewhere.
      if (caller_gate_.Park(stopping_, last_parked_pass)) {
        std::lock_guard lock(progress_mutex_);
        ProgressAllLocked(/*arm=*/false);
      }
      spin_watch.Reset();  // parked time is not a lost core
      armed = false;
      activity_unclocked = true;  // adaptive spins on once the callers have left
      continue;
    }
    if (!spinning && armed) {
      SleepForEvents();
      // A wake-up is activity: adaptive spins again from here (and a caller that
      // woke the thread to take the passes over finds it spinning, so it parks).
      last_activity = Clock::now();
      was_spinning = true;
      passes_unclocked = 0;
      armed = false;
      continue;
    }
    bool progressed = false;
    {
      std::lock_guard lock(progress_mutex_);
      progressed = ProgressAllLocked(/*arm=*/!spinning);
    }
    armed = !spinning;
    activity_unclocked |= progressed;
    idle_passes = progressed ? 0 : idle_passes + 1;
    if (mode == PollingMode::kBusy && idle_passes >= kSpinsBeforeYield) ::sched_yield();
  }
}

}  // namespace artune::transport::fabric::verbs
