// The plumbing the fabrics share (progress_fabric.h).
#include "fabric/progress_fabric.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace artune::transport::fabric {

using pass_internal::KindBit;
using pass_internal::kinds_in_pass;

ProgressFabric::ProgressFabric(FabricKind kind, PollingMode polling, uint32_t poll_spin_us)
    : kind_(kind), polling_(polling), poll_spin_us_(poll_spin_us) {}

ProgressFabric::~ProgressFabric() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status ProgressFabric::OpenWakeFd(std::string_view fabric) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0)
    return Status::FromErrno("eventfd for the " + std::string(fabric) + " fabric", errno);
  return Status::Ok();
}

Result<int> ProgressFabric::OpenEpollWithWake(std::string_view fabric, uint64_t wake_tag) {
  const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) {
    return Status::FromErrno("epoll_create1 for the " + std::string(fabric) + " fabric", errno);
  }
  Status status = OpenWakeFd(fabric);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = wake_tag;
  if (status.ok() && ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    status = Status::FromErrno("epoll_ctl(eventfd)", errno);
  }
  if (!status.ok()) {
    ::close(epoll_fd);
    return status;
  }
  return epoll_fd;
}

void ProgressFabric::Wake() {
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
}

void ProgressFabric::DrainWake() {
  uint64_t value = 0;
  (void)!::read(wake_fd_, &value, sizeof(value));
}

void ProgressFabric::SetPolling(PollingMode mode) {
  std::lock_guard shutdown_lock(shutdown_mutex_);
  if (polling_.exchange(mode) == mode || shut_down_) return;
  Wake();  // a thread asleep in its wait takes a switch to busy now
}

void ProgressFabric::SetPollSpin(uint32_t spin_us) {
  poll_spin_us_.store(spin_us, std::memory_order_relaxed);
}

void ProgressFabric::BeginCallerPolling() {
  // Event, or adaptive after an idle spell: the progress thread sleeps holding the
  // pass; woken, it sees the caller and parks, instead of taking the caller's
  // completions from under it.
  if (caller_gate_.Begin()) {
    std::lock_guard shutdown_lock(shutdown_mutex_);
    if (!shut_down_) Wake();
  }
}

bool ProgressFabric::WaitPass(int timeout_ms, const std::atomic<bool>& finished) {
  if ((kinds_in_pass & KindBit(kind_)) != 0) return false;
  // Not a blocking lock: another caller may sleep in the pass for its whole
  // timeout, and this one's completion may already have come through it.
  std::unique_lock lock(progress_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || stopping_.load(std::memory_order_relaxed) ||
      finished.load(std::memory_order_acquire)) {
    return false;
  }
  return WaitPassLocked(timeout_ms, finished);
}

void ProgressFabric::Shutdown() {
  std::lock_guard shutdown_lock(shutdown_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  stopping_ = true;
  Wake();
  caller_gate_.WakeParked();
  if (progress_.joinable()) progress_.join();
  StopOtherThreads();
  // No caller runs a pass any more either (TryCallerPass and WaitPass check
  // stopping_ under the lock).
  std::lock_guard progress_lock(progress_mutex_);
  TearDownLocked();
}

}  // namespace artune::transport::fabric
