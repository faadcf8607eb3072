#include "timer.h"
#include "thread_name.h"

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
  bool wake = false;
  Handle handle{deadline, 0};
  {
    std::lock_guard lock(mutex_);
    handle.second = next_sequence_++;
    pending_.emplace(handle, std::move(action));
    wake = deadline < wakes_at_;
    // Set here, not by the thread once it runs: further Adds before it does must
    // not wake it again.
    if (wake) wakes_at_ = deadline;
  }
  if (wake) wake_.notify_one();
  return handle;
}

void Timer::Cancel(const Handle& handle) {
  std::lock_guard lock(mutex_);
  pending_.erase(handle);
}

void Timer::Run() {
  NameThisThread("artune-timer");
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (pending_.empty()) {
      wakes_at_ = Clock::time_point::max();
      wake_.wait(lock);
      continue;
    }
    auto first = pending_.begin();
    // A copy: Cancel may erase the entry while this thread waits.
    const Clock::time_point deadline = first->first.first;
    if (Clock::now() < deadline) {
      wakes_at_ = deadline;
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
