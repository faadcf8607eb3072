// The shm fabric: registration table, the endpoints' epoll watch and the
// progress passes (the progress thread's, or a polling caller's). Connection
// setup is in shm_setup.cc.
#include "fabric/shm/shm_fabric.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fabric/spin_governor.h"
#include "thread_name.h"

namespace artune::transport::fabric::shm {
namespace {
// PollEndpointsLocked's look at the sockets: at the end of every
// kPassesPerSocketLook passes, if one of them moved something or the last look
// is kSocketLookEvery old (an idle busy spin: about a millisecond).
constexpr uint32_t kPassesPerSocketLook = 256;
constexpr std::chrono::microseconds kSocketLookEvery{1000};
}  // namespace

ShmReadCounters& ReadCounters() {
  static ShmReadCounters counters;
  return counters;
}

ShmFabric::ShmFabric(PollingMode polling)
    : ProgressFabric(FabricKind::kShm, polling, /*poll_spin_us=*/50) {}

ShmFabric::~ShmFabric() { Shutdown(); }

Status ShmFabric::Init() {
  ARTUNE_ASSIGN_OR_RETURN(epoll_fd_, OpenEpollWithWake("shm", kTagWake));
  StartProgressThread();
  return Status::Ok();
}

Result<MemoryKeys> ShmFabric::Register(std::byte* addr, uint64_t length) {
  if (addr == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory region");
  }
  auto region = std::make_shared<Region>();
  region->addr = addr;
  region->length = length;
  const uint32_t key = regions_.Add(std::move(region));
  return MemoryKeys{key, key};
}

void ShmFabric::Deregister(const MemoryKeys& keys) {
  std::shared_ptr<Region> region = regions_.Take(keys.lkey);
  if (region == nullptr) return;
  // Owner-side copies stop at their next fragment. (A grant already given lets the
  // peer finish its process_vm_readv: that touches the peer's memory, not ours, and
  // the engine revokes its offers, which waits for grants, before it frees.)
  std::lock_guard lock(region->mutex);
  region->deregistered = true;
}

Status ShmFabric::Watch(ShmEndpoint* endpoint) {
  const Link& link = endpoint->link();
  const auto tag = reinterpret_cast<uint64_t>(endpoint);
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.u64 = tag | kTagLiveness;
  int rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.socket, &event);
  if (rc == 0 && link.pidfd >= 0) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.pidfd, &event);
  // Edge-triggered: each write of the peer is one wake-up, drained when it comes.
  event.events = EPOLLIN | EPOLLET;
  event.data.u64 = tag | kTagRing;
  if (rc == 0) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.doorbell, &event);
  if (rc != 0) return Status::FromErrno("epoll_ctl(shm connection " + link.peer + ")", errno);
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) {
    started_.push_back(it->second);
    started_changed_.store(true, std::memory_order_release);
  }
  Wake();
  return Status::Ok();
}

void ShmFabric::Unwatch(ShmEndpoint* endpoint) {
  const Link& link = endpoint->link();
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.socket, nullptr);
  if (link.pidfd >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.pidfd, nullptr);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.doorbell, nullptr);
}

void ShmFabric::Forget(ShmEndpoint* endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) return;
  std::erase_if(started_, [endpoint](const auto& e) { return e.get() == endpoint; });
  graveyard_.push_back(std::move(it->second));
  started_changed_.store(true, std::memory_order_release);
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
      DrainWake();
    } else if (data == kTagListener) {
      AcceptAll();
    } else if (tag == kTagHello) {
      OnHello(static_cast<int>(data >> 3));
    } else if (tag == kTagLiveness) {
      auto* endpoint = reinterpret_cast<ShmEndpoint*>(data);
      if (!endpoint->torn_down()) endpoint->OnEvent();
    }
    // kTagRing: the wake-up was the point; the pass polls the rings next, and
    // PrepareToSleep drains the doorbell now and then (shm_doorbell.h).
  }
}

bool ShmFabric::PollEndpointsLocked() {
  if (started_changed_.load(std::memory_order_acquire)) {
    std::lock_guard lock(endpoints_mutex_);
    polled_ = started_;
    started_changed_.store(false, std::memory_order_relaxed);
    graveyard_.clear();  // Forget's endpoints, no longer in polled_
  }
  const PassScope pass(*this);
  bool progressed = false;
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) progressed |= endpoint->Poll();
  }
  // Sockets (liveness, accepts) are looked at every kPassesPerSocketLook passes
  // while data flows, and about every kSocketLookEvery while a spin finds nothing
  // (an idle spin makes a pass every few tens of nanoseconds: a look every 256
  // passes was an epoll_wait every ~10 us, a system call per few round trips;
  // bench/side-by-side.md, 2026-11-28 02:50). Time, not a count of idle passes:
  // a spin that yields on every pass (a busy host) takes a long while over them,
  // and a client's connection waits for the look to be accepted.
  moved_since_look_ |= progressed;
  if ((++passes_ % kPassesPerSocketLook) == 0) {
    const Clock::time_point now = Clock::now();
    if (moved_since_look_ || now - last_socket_look_ >= kSocketLookEvery) {
      moved_since_look_ = false;
      last_socket_look_ = now;
      pass_socket_looks_.fetch_add(1, std::memory_order_relaxed);
      WaitForEvents(0);
    }
  }
  return progressed;
}

void ShmFabric::SleepLocked(int timeout_ms, bool caller) {
  const PassScope pass(*this);
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
}

void ShmFabric::ProgressLoop() {
  NameThisThread("artune-shm");
  auto last_activity = Clock::now();
  auto last_parked_pass = last_activity;
  IdleYield idle_yield;
  SpinWatch spin_watch;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Read on every pass: SetPolling may switch it while the thread runs.
    const PollingMode mode = polling();
    const bool spinning = SpinsThisPass(mode, last_activity, spin_watch);
    if (caller_gate_.callers_polling()) {
      spin_watch.Reset();  // parked time is not a lost core
      // A caller drives progress (any polling mode: an event-mode caller sleeps
      // in WaitPass): stand aside rather than compete for the pass. A pass of its
      // own now and then keeps liveness, accepts and hello deadlines going.
      if (caller_gate_.Park(stopping_, last_parked_pass)) {
        std::lock_guard lock(progress_mutex_);
        PollEndpointsLocked();
        const PassScope pass(*this);
        WaitForEvents(0);
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
    // A spinning thread that found nothing for a while lets the threads it waits
    // for (the caller, the handlers) run: on a host with few cores they share
    // them, and a hand-off that waits for a time slice costs milliseconds.
    if (mode == PollingMode::kBusy) idle_yield.AfterPass(progressed);
  }
}

bool ShmFabric::Poll() {
  // A polling caller that finds nothing for a while yields its core, as the
  // progress thread does: the thread it waits for (the peer's progress thread, a
  // handler) may share that core, and then waits a whole scheduler tick (4 ms
  // round trips under load) if the caller never lets go.
  thread_local IdleYield idle_yield;
  const CallerPass pass = TryCallerPass([this] { return PollEndpointsLocked(); });
  if (pass == CallerPass::kNotRun) return false;
  const bool progressed = pass == CallerPass::kProgressed;
  if (polling() == PollingMode::kBusy) idle_yield.AfterPass(progressed);
  return progressed;
}

bool ShmFabric::WaitPassLocked(int timeout_ms, const std::atomic<bool>& finished) {
  // What has come already is taken without sleeping; otherwise the caller sleeps
  // as the progress thread would, armed so that the peer's next record wakes it.
  if (!PollEndpointsLocked() && !finished.load(std::memory_order_acquire)) {
    SleepLocked(timeout_ms, /*caller=*/true);
    PollEndpointsLocked();  // what woke it, delivered before the caller looks
  }
  return true;
}

void ShmFabric::TearDownLocked() {
  TearDownEndpoints(endpoints_mutex_, endpoints_);
  {
    std::lock_guard lock(endpoints_mutex_);
    graveyard_.clear();
    started_.clear();
    endpoints_.clear();
  }
  polled_.clear();
  for (auto& [fd, deadline] : half_open_) ::close(fd);
  half_open_.clear();
  for (int fd : {listen_fd_, epoll_fd_}) {
    if (fd >= 0) ::close(fd);
  }
  listen_fd_ = epoll_fd_ = -1;
}

}  // namespace artune::transport::fabric::shm
