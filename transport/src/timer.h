// Deadlines for client calls: one thread sleeps until the earliest deadline and runs
// its action (which fails the call with kTimeout). Completed calls cancel theirs, so
// the set only holds calls in flight.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace artune::transport {

class Timer {
 public:
  using Clock = std::chrono::steady_clock;
  using Handle = std::pair<Clock::time_point, uint64_t>;

  Timer();
  ~Timer();  // joins the thread; pending actions are dropped

  // `action` runs on the timer thread at `deadline` unless cancelled first.
  Handle Add(Clock::time_point deadline, std::function<void()> action);
  void Cancel(const Handle& handle);

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<Handle, std::function<void()>> pending_;
  // When the thread wakes next on its own (max: it waits for a notify). Add wakes
  // it only for an earlier deadline: a call loop, whose every deadline comes after
  // the one the thread already sleeps towards, costs no futex wake per call.
  Clock::time_point wakes_at_ = Clock::time_point::max();
  uint64_t next_sequence_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace artune::transport
