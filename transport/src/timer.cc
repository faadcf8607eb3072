#include "timer.h"
#include "thread_name.h"

namespace artune::transport {

Timer::Timer() : thread_([this] { Run(); }) { spare_.reserve(kSpareNodes); }

Timer::~Timer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Timer::Handle Timer::Add(Clock::time_point deadline, std::function<void()> action) {
  return AddEntry(deadline, Entry{std::move(action), {}, 0});
}

Timer::Handle Timer::Add(Clock::time_point deadline, std::weak_ptr<DeadlineTarget> target,
                         uint64_t cookie) {
  return AddEntry(deadline, Entry{nullptr, std::move(target), cookie});
}

Timer::Handle Timer::AddEntry(Clock::time_point deadline, Entry entry) {
  bool wake = false;
  Handle handle{deadline, 0};
  {
    std::lock_guard lock(mutex_);
    handle.second = next_sequence_++;
    if (spare_.empty()) {
      pending_.emplace(handle, std::move(entry));
    } else {
      Pending::node_type node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = handle;
      node.mapped() = std::move(entry);
      pending_.insert(std::move(node));
    }
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
  Pending::node_type node = pending_.extract(handle);
  if (node.empty() || spare_.size() >= kSpareNodes) return;
  node.mapped() = Entry{};  // lets go of what the action or the target held
  spare_.push_back(std::move(node));
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
    Entry entry = std::move(first->second);
    pending_.erase(first);
    lock.unlock();
    if (entry.action) {
      entry.action();
    } else if (auto target = entry.target.lock()) {
      target->OnDeadline(entry.cookie);
    }
    lock.lock();
  }
}

}  // namespace artune::transport
