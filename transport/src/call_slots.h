// A client's call slots (max_outstanding calls in flight) and a call's completion,
// which gives its slot back before the caller's `done` runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "artune/transport/transport.h"

namespace artune::transport {

// Calls in flight, bounded by max_outstanding. Shared with the calls' CallDone so
// a late completion never touches a destroyed client.
class CallSlots {
 public:
  explicit CallSlots(uint32_t limit) : limit_(limit) {}
  bool Acquire(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    return freed_.wait_until(lock, deadline, [this] { return in_use_ < limit_; }) && ++in_use_ > 0;
  }
  bool TryAcquire() {
    std::lock_guard lock(mutex_);
    return in_use_ < limit_ && ++in_use_ > 0;
  }
  void Release() {
    {
      std::lock_guard lock(mutex_);
      --in_use_;
    }
    freed_.notify_one();
  }
  void SetLimit(uint32_t limit) {
    {
      std::lock_guard lock(mutex_);
      limit_ = limit;
    }
    freed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  uint32_t limit_;
  uint32_t in_use_ = 0;
};

// What a client call runs once, at its end. The slot travels with the caller's
// `done` instead of inside a wrapping lambda: a lambda holding both is too large
// for std::function's inline room, one heap allocation per call.
class CallDone {
 public:
  CallDone() = default;
  CallDone(Client::Done done, std::shared_ptr<CallSlots> slots)
      : done_(std::move(done)), slots_(std::move(slots)) {}

  explicit operator bool() const { return done_ || slots_; }
  // Releases the slot (once), then runs `done`.
  void operator()(Result<Message> result) {
    if (slots_) std::exchange(slots_, nullptr)->Release();
    if (done_) done_(std::move(result));
  }

 private:
  Client::Done done_;
  std::shared_ptr<CallSlots> slots_;
};

}  // namespace artune::transport
