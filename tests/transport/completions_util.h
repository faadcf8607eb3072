// Completions of one fabric endpoint, collected by its handler and awaited by the
// test thread (fabric_test.cc, the shm suites), with the thread that delivered
// each (caller-driven progress tests ask which thread ran the pass).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "fabric/fabric.h"

namespace artune::transport::testing {

class Completions {
 public:
  fabric::CompletionHandler Handler() {
    return [this](fabric::Endpoint&, const fabric::Completion& completion) {
      std::lock_guard lock(mutex_);
      queue_.push_back(completion);
      threads_.push_back(std::this_thread::get_id());
      changed_.notify_all();
    };
  }
  // Without waiting: the next completion and the thread that delivered it.
  std::optional<std::pair<fabric::Completion, std::thread::id>> TryNext() {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return std::nullopt;
    auto next = std::make_pair(queue_.front(), threads_.front());
    queue_.pop_front();
    threads_.pop_front();
    return next;
  }
  // The next completion, or a kDisconnected with kTimeout status after 30 s.
  fabric::Completion Next() {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::seconds(30), [&] { return !queue_.empty(); })) {
      return {fabric::CompletionKind::kDisconnected, 0, 0, Status::Timeout("no completion")};
    }
    fabric::Completion next = queue_.front();
    queue_.pop_front();
    threads_.pop_front();
    return next;
  }
  void Clear() {
    std::lock_guard lock(mutex_);
    queue_.clear();
    threads_.clear();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<fabric::Completion> queue_;
  std::deque<std::thread::id> threads_;  // the thread that delivered each
};

}  // namespace artune::transport::testing
