// Deadlines for client calls: one thread sleeps until the earliest deadline and runs
// its action (which fails the call with kTimeout). Completed calls cancel theirs, so
// the set only holds calls in flight.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace artune::transport {

// What a deadline added with a target calls: an object the timer holds weakly, so
// that a deadline outliving its owner does nothing.
class DeadlineTarget {
 public:
  virtual void OnDeadline(uint64_t cookie) = 0;

 protected:
  ~DeadlineTarget() = default;
};

class Timer {
 public:
  using Clock = std::chrono::steady_clock;
  using Handle = std::pair<Clock::time_point, uint64_t>;

  Timer();
  ~Timer();  // joins the thread; pending actions are dropped

  // `action` runs on the timer thread at `deadline` unless cancelled first.
  Handle Add(Clock::time_point deadline, std::function<void()> action);
  // `target->OnDeadline(cookie)` runs on the timer thread at `deadline` unless
  // cancelled first or the target is gone. Allocates nothing in the steady state
  // (a call's deadline: added and cancelled once per call).
  Handle Add(Clock::time_point deadline, std::weak_ptr<DeadlineTarget> target, uint64_t cookie);
  void Cancel(const Handle& handle);

 private:
  struct Entry {
    std::function<void()> action;  // set, or else target and cookie
    std::weak_ptr<DeadlineTarget> target;
    uint64_t cookie = 0;
  };
  using Pending = std::map<Handle, Entry>;

  Handle AddEntry(Clock::time_point deadline, Entry entry);
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;
  Pending pending_;
  // Nodes of cancelled entries, reused by Add: a deadline per call costs no heap
  // allocation once as many nodes exist as calls are in flight (at most
  // kSpareNodes are kept).
  static constexpr size_t kSpareNodes = 256;
  std::vector<Pending::node_type> spare_;
  // When the thread wakes next on its own (max: it waits for a notify). Add wakes
  // it only for an earlier deadline: a call loop, whose every deadline comes after
  // the one the thread already sleeps towards, costs no futex wake per call.
  Clock::time_point wakes_at_ = Clock::time_point::max();
  uint64_t next_sequence_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace artune::transport
