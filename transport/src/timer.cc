#include "timer.h"

namespace artune::transport {

Timer::Timer() : thread_([this] { Run(); }) {}

Timer::~Timer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Timer::Handle Timer::Add(Clock::time_point deadline, std::function<void()> action) {
  std::lock_guard lock(mutex_);
  Handle handle{deadline, next_sequence_++};
  const bool earliest = pending_.empty() || handle < pending_.begin()->first;
  pending_.emplace(handle, std::move(action));
  if (earliest) wake_.notify_all();
  return handle;
}

void Timer::Cancel(const Handle& handle) {
  std::lock_guard lock(mutex_);
  pending_.erase(handle);
}

void Timer::Run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (pending_.empty()) {
      wake_.wait(lock);
      continue;
    }
    auto first = pending_.begin();
    // A copy: Cancel may erase the entry while this thread waits.
    const Clock::time_point deadline = first->first.first;
    if (Clock::now() < deadline) {
      wake_.wait_until(lock, deadline);
      continue;
    }
    std::function<void()> action = std::move(first->second);
    pending_.erase(first);
    lock.unlock();
    action();
    lock.lock();
  }
}

}  // namespace artune::transport
