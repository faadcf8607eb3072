// The shm fabric: registration table, the endpoints' epoll watch and the
// progress passes (the progress thread's, or a polling caller's). Connection
// setup is in shm_setup.cc.
#include "fabric/shm/shm_fabric.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fabric/spin_governor.h"
#include "thread_name.h"

namespace artune::transport::fabric::shm {
namespace {
// Busy polling: idle passes before the spinning thread yields its core each pass.
constexpr uint32_t kSpinsBeforeYield = 64;
}  // namespace

ShmReadCounters& ReadCounters() {
  static ShmReadCounters counters;
  return counters;
}

ShmFabric::ShmFabric(PollingMode polling) : polling_(polling) {}

ShmFabric::~ShmFabric() { Shutdown(); }

Status ShmFabric::Init() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Status::FromErrno("epoll_create1 for the shm fabric", errno);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::FromErrno("eventfd for the shm fabric", errno);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kTagWake;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    return Status::FromErrno("epoll_ctl(eventfd)", errno);
  }
  progress_ = std::thread([this] { ProgressLoop(); });
  return Status::Ok();
}

Result<MemoryKeys> ShmFabric::Register(std::byte* addr, uint64_t length) {
  if (addr == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory region");
  }
  std::lock_guard lock(regions_mutex_);
  uint32_t key = 0;
  do {
    key = next_key_++;
  } while (key == 0 || regions_.contains(key));
  auto region = std::make_shared<Region>();
  region->addr = addr;
  region->length = length;
  regions_[key] = std::move(region);
  return MemoryKeys{key, key};
}

void ShmFabric::Deregister(const MemoryKeys& keys) {
  std::shared_ptr<Region> region;
  {
    std::lock_guard lock(regions_mutex_);
    auto it = regions_.find(keys.lkey);
    if (it == regions_.end()) return;
    region = std::move(it->second);
    regions_.erase(it);
  }
  // Owner-side copies stop at their next fragment. (A grant already given lets the
  // peer finish its process_vm_readv: that touches the peer's memory, not ours, and
  // the engine revokes its offers, which waits for grants, before it frees.)
  std::lock_guard lock(region->mutex);
  region->deregistered = true;
}

std::shared_ptr<Region> ShmFabric::FindRegion(uint32_t lkey) {
  std::lock_guard lock(regions_mutex_);
  auto it = regions_.find(lkey);
  return it == regions_.end() ? nullptr : it->second;
}

Status ShmFabric::Watch(ShmEndpoint* endpoint) {
  const Link& link = endpoint->link();
  const auto tag = reinterpret_cast<uint64_t>(endpoint);
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.u64 = tag | kTagLiveness;
  int rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.socket, &event);
  if (rc == 0 && link.pidfd >= 0) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.pidfd, &event);
  // Edge-triggered: each write of the peer is one wake-up, and the counter never
  // needs reading (a system call saved per wake-up).
  event.events = EPOLLIN | EPOLLET;
  event.data.u64 = tag | kTagRing;
  if (rc == 0) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.own_wake, &event);
  if (rc != 0) return Status::FromErrno("epoll_ctl(shm connection " + link.peer + ")", errno);
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) {
    started_.push_back(it->second);
    started_changed_ = true;
  }
  Wake();
  return Status::Ok();
}

void ShmFabric::Unwatch(ShmEndpoint* endpoint) {
  const Link& link = endpoint->link();
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.socket, nullptr);
  if (link.pidfd >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.pidfd, nullptr);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.own_wake, nullptr);
}

void ShmFabric::Forget(ShmEndpoint* endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) return;
  std::erase_if(started_, [endpoint](const auto& e) { return e.get() == endpoint; });
  started_changed_ = true;
  graveyard_.push_back(std::move(it->second));
  endpoints_.erase(it);
}

void ShmFabric::NoteOneCopyRefused(const std::string& peer, int error) {
  ReadCounters().cma_refused.fetch_add(1, std::memory_order_relaxed);
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  std::fprintf(stderr,
               "artune transport: process_vm_readv from %s refused (%s): shm reads fall back "
               "to a copy through the ring by the peer (slower; one-copy reads need ptrace "
               "rights: same user, kernel.yama.ptrace_scope 0 or CAP_SYS_PTRACE)\n",
               peer.c_str(), std::strerror(error));
}

void ShmFabric::WaitForEvents(int timeout_ms) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  timeout_ms = ResumeAcceptingIfDue(timeout_ms);
  const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const uint64_t data = events[i].data.u64;
    const uint64_t tag = data & 7;
    if (data == kTagWake) {
      uint64_t value = 0;
      (void)!::read(wake_fd_, &value, sizeof(value));
    } else if (data == kTagListener) {
      AcceptAll();
    } else if (tag == kTagHello) {
      OnHello(static_cast<int>(data >> 3));
    } else if (tag == kTagLiveness) {
      auto* endpoint = reinterpret_cast<ShmEndpoint*>(data);
      if (!endpoint->torn_down()) endpoint->OnEvent();
    }
    // kTagRing: the wake-up itself was the point; the rings are polled below.
  }
}

// The thread running a pass: a completion callback that waits for a call of its
// own must not try to run a nested pass (std::mutex is not recursive).
thread_local bool in_shm_pass = false;
// The fabric whose pass this thread runs: work queued for it from there is picked
// up by that same pass, work for another fabric needs that fabric woken.
thread_local const ShmFabric* pass_fabric = nullptr;

bool ShmFabric::InPassOnThisThread() const { return pass_fabric == this; }

bool ShmFabric::PollEndpointsLocked() {
  {
    std::lock_guard lock(endpoints_mutex_);
    if (started_changed_) {
      polled_ = started_;
      started_changed_ = false;
    }
    graveyard_.clear();
  }
  in_shm_pass = true;
  pass_fabric = this;
  bool progressed = false;
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) progressed |= endpoint->Poll();
  }
  // Sockets (liveness, accepts) are looked at every so often while data flows.
  if ((++passes_ & 255) == 0) WaitForEvents(0);
  in_shm_pass = false;
  pass_fabric = nullptr;
  return progressed;
}

void ShmFabric::SleepLocked(int timeout_ms, bool caller) {
  in_shm_pass = true;
  pass_fabric = this;
  bool must_not_sleep = false;
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) must_not_sleep |= endpoint->PrepareToSleep();
  }
  if (must_not_sleep) timeout_ms = 0;
  if (!half_open_.empty()) {
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(half_open_, [&](const auto& entry) {
      if (entry.second > now) return false;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, entry.first, nullptr);
      ::close(entry.first);
      return true;
    });
    if (timeout_ms < 0 || timeout_ms > 1000) timeout_ms = 1000;
  }
  // The progress thread asleep holding the pass: a caller that wants to poll
  // wakes it (BeginCallerPolling) so that it hands the passes over. A caller
  // asleep here (WaitPass) is one of those callers itself.
  if (!caller && timeout_ms != 0 && !caller_gate_.EnterSleep()) timeout_ms = 0;
  WaitForEvents(timeout_ms);
  if (!caller) caller_gate_.LeaveSleep();
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) endpoint->Awake();
  }
  in_shm_pass = false;
  pass_fabric = nullptr;
}

void ShmFabric::ProgressLoop() {
  NameThisThread("artune-shm");
  using Clock = std::chrono::steady_clock;
  auto last_activity = Clock::now();
  auto last_parked_pass = last_activity;
  uint32_t idle_passes = 0;
  SpinWatch spin_watch;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Read on every pass: SetPolling may switch it while the thread runs. Adaptive
    // spins while there was activity within poll_spin_us and the host lets it
    // (fabric/spin_governor.h), then sleeps.
    const PollingMode mode = polling_.load(std::memory_order_relaxed);
    bool spinning = mode == PollingMode::kBusy;
    if (mode == PollingMode::kAdaptive) {
      spinning = spin_watch.AdaptiveSpins(
          last_activity, std::chrono::microseconds(poll_spin_us_.load(std::memory_order_relaxed)));
    } else {
      spin_watch.Reset();
    }
    if (caller_gate_.callers_polling()) {
      spin_watch.Reset();  // parked time is not a lost core
      // A caller drives progress (any polling mode: an event-mode caller sleeps
      // in WaitPass): stand aside rather than compete for the pass. A pass of its
      // own now and then keeps liveness, accepts and hello deadlines going.
      if (caller_gate_.Park(stopping_, last_parked_pass)) {
        std::lock_guard lock(progress_mutex_);
        PollEndpointsLocked();
        in_shm_pass = true;
        pass_fabric = this;
        WaitForEvents(0);
        in_shm_pass = false;
        pass_fabric = nullptr;
      }
      last_activity = Clock::now();
      continue;
    }
    bool progressed = false;
    {
      std::lock_guard lock(progress_mutex_);
      progressed = PollEndpointsLocked();
      if (!spinning && !progressed) {
        SleepLocked(-1, /*caller=*/false);
        continue;
      }
    }
    if (progressed) {
      last_activity = Clock::now();
      spin_watch.Reset();  // the pass's time was work, not a lost core
    }
    idle_passes = progressed ? 0 : idle_passes + 1;
    // A spinning thread that found nothing for a while lets the threads it waits
    // for (the caller, the handlers) run: on a host with few cores they share
    // them, and a hand-off that waits for a time slice costs milliseconds.
    if (mode == PollingMode::kBusy && idle_passes >= kSpinsBeforeYield) ::sched_yield();
  }
}

void ShmFabric::BeginCallerPolling() {
  // Adaptive after an idle spell: the progress thread sleeps holding the pass.
  if (caller_gate_.Begin()) {
    std::lock_guard shutdown_lock(shutdown_mutex_);  // Shutdown closes the eventfd
    if (!shut_down_) Wake();
  }
}

void ShmFabric::EndCallerPolling(bool hand_over) { caller_gate_.End(hand_over); }

bool ShmFabric::Poll() {
  if (in_shm_pass) return false;
  // A polling caller that finds nothing for a while yields its core, as the
  // progress thread does: the thread it waits for (the peer's progress thread, a
  // handler) may share that core, and then waits a whole scheduler tick (4 ms
  // round trips under load) if the caller never lets go.
  thread_local uint32_t idle_polls = 0;
  bool progressed = false;
  {
    std::unique_lock lock(progress_mutex_, std::try_to_lock);
    if (!lock.owns_lock() || stopping_.load(std::memory_order_relaxed)) return false;
    progressed = PollEndpointsLocked();
  }
  idle_polls = progressed ? 0 : idle_polls + 1;
  if (idle_polls >= kSpinsBeforeYield &&
      polling_.load(std::memory_order_relaxed) == PollingMode::kBusy) {
    ::sched_yield();
  }
  return progressed;
}

bool ShmFabric::WaitPass(int timeout_ms, const std::atomic<bool>& finished) {
  if (in_shm_pass) return false;
  // Not a blocking lock: another caller may sleep in the pass for its whole
  // timeout, and this one's completion may already have come through it.
  std::unique_lock lock(progress_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || stopping_.load(std::memory_order_relaxed) ||
      finished.load(std::memory_order_acquire)) {
    return false;
  }
  // What has come already is taken without sleeping; otherwise the caller sleeps
  // as the progress thread would, armed so that the peer's next record wakes it.
  if (!PollEndpointsLocked() && !finished.load(std::memory_order_acquire)) {
    SleepLocked(timeout_ms, /*caller=*/true);
    PollEndpointsLocked();  // what woke it, delivered before the caller looks
  }
  return true;
}

void ShmFabric::SetPollSpin(uint32_t spin_us) {
  poll_spin_us_.store(spin_us, std::memory_order_relaxed);
}

void ShmFabric::Wake() {
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
}

void ShmFabric::SetPolling(PollingMode mode) {
  std::lock_guard shutdown_lock(shutdown_mutex_);
  if (polling_.exchange(mode) == mode || shut_down_) return;
  Wake();
}

void ShmFabric::Shutdown() {
  std::lock_guard shutdown_lock(shutdown_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  stopping_ = true;
  Wake();
  caller_gate_.WakeParked();
  if (progress_.joinable()) progress_.join();
  // No caller runs a pass any more either (Poll checks stopping_ under the lock).
  std::lock_guard progress_lock(progress_mutex_);
  std::vector<std::shared_ptr<ShmEndpoint>> remaining;
  {
    std::lock_guard lock(endpoints_mutex_);
    for (auto& [raw, endpoint] : endpoints_) remaining.push_back(endpoint);
  }
  for (auto& endpoint : remaining) {
    endpoint->Teardown(Status::Cancelled("the transport is shutting down"));
  }
  {
    std::lock_guard lock(endpoints_mutex_);
    graveyard_.clear();
    started_.clear();
    endpoints_.clear();
  }
  polled_.clear();
  for (auto& [fd, deadline] : half_open_) ::close(fd);
  half_open_.clear();
  for (int fd : {listen_fd_, wake_fd_, epoll_fd_}) {
    if (fd >= 0) ::close(fd);
  }
  listen_fd_ = wake_fd_ = epoll_fd_ = -1;
}

}  // namespace artune::transport::fabric::shm
