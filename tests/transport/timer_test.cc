// The call-deadline timer: actions run at their deadline, in order, unless
// cancelled; an earlier deadline added while the thread sleeps towards a later one
// still runs on time, and so does one added after the deadline it slept towards
// was cancelled (Add wakes the thread only when it must).
#include "timer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace artune::transport {
namespace {

using Clock = Timer::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Records which actions ran, in order, and lets the test wait for a count.
class Fired {
 public:
  std::function<void()> Record(int tag) {
    return [this, tag] {
      std::lock_guard lock(mutex_);
      order_.push_back(tag);
      changed_.notify_all();
    };
  }
  // Waits (bounded) until `count` actions ran; returns whether they did.
  bool WaitFor(size_t count, Clock::duration limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return order_.size() >= count; });
  }
  std::vector<int> order() {
    std::lock_guard lock(mutex_);
    return order_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> order_;
};

TEST(TimerTest, RunsActionsInDeadlineOrder) {
  Timer timer;
  Fired fired;
  const auto now = Clock::now();
  timer.Add(now + milliseconds(60), fired.Record(3));
  timer.Add(now + milliseconds(20), fired.Record(1));
  timer.Add(now + milliseconds(40), fired.Record(2));
  ASSERT_TRUE(fired.WaitFor(3, seconds(10)));
  EXPECT_EQ(fired.order(), (std::vector<int>{1, 2, 3}));
}

TEST(TimerTest, CancelledActionsDoNotRun) {
  Timer timer;
  Fired fired;
  const auto now = Clock::now();
  const Timer::Handle cancelled = timer.Add(now + milliseconds(10), fired.Record(1));
  timer.Add(now + milliseconds(50), fired.Record(2));
  timer.Cancel(cancelled);
  ASSERT_TRUE(fired.WaitFor(1, seconds(10)));
  // Well past both deadlines: only the second ran.
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(fired.order(), (std::vector<int>{2}));
}

// The thread sleeps towards a far deadline; a nearer one must wake it. Without the
// wake the near action would run only after an hour, and the bounded wait fails.
TEST(TimerTest, AnEarlierDeadlineWakesTheSleepingThread) {
  Timer timer;
  Fired fired;
  timer.Add(Clock::now() + std::chrono::hours(1), fired.Record(1));
  std::this_thread::sleep_for(milliseconds(20));  // let the thread go to sleep
  timer.Add(Clock::now() + milliseconds(10), fired.Record(2));
  ASSERT_TRUE(fired.WaitFor(1, seconds(10)));
  EXPECT_EQ(fired.order(), (std::vector<int>{2}));
}

// As a call loop does: each deadline is cancelled and a later one added. Add does
// not wake the thread for the later one; it must still run when it is due.
TEST(TimerTest, ALaterDeadlineAfterACancelStillRuns) {
  Timer timer;
  Fired fired;
  const auto now = Clock::now();
  const Timer::Handle first = timer.Add(now + milliseconds(30), fired.Record(1));
  std::this_thread::sleep_for(milliseconds(5));
  timer.Cancel(first);
  for (int i = 0; i < 100; ++i) {
    const Timer::Handle loop = timer.Add(now + seconds(30), fired.Record(100 + i));
    timer.Cancel(loop);
  }
  timer.Add(now + milliseconds(60), fired.Record(2));
  ASSERT_TRUE(fired.WaitFor(1, seconds(10)));
  EXPECT_EQ(fired.order(), (std::vector<int>{2}));
}

// An empty timer waits without a deadline; the first Add must wake it.
TEST(TimerTest, TheFirstDeadlineWakesAnIdleThread) {
  Timer timer;
  Fired fired;
  std::this_thread::sleep_for(milliseconds(20));
  timer.Add(Clock::now() + milliseconds(10), fired.Record(1));
  ASSERT_TRUE(fired.WaitFor(1, seconds(10)));
}

// A deadline added with a target calls it with its cookie; one whose target is
// gone does nothing; a cancelled one's node is reused by the next Add and still
// runs the new deadline, not the old one.
class CountingTarget : public DeadlineTarget {
 public:
  explicit CountingTarget(Fired& fired) : fired_(fired) {}
  void OnDeadline(uint64_t cookie) override { fired_.Record(static_cast<int>(cookie))(); }

 private:
  Fired& fired_;
};

TEST(TimerTest, ADeadlineWithATargetCallsItUnlessItIsGone) {
  Timer timer;
  Fired fired;
  auto kept = std::make_shared<CountingTarget>(fired);
  auto gone = std::make_shared<CountingTarget>(fired);
  const auto now = Clock::now();
  timer.Add(now + milliseconds(40), std::weak_ptr<CountingTarget>(gone), 1);
  // Cancelled: its node is kept and reused by the Add after it.
  timer.Cancel(timer.Add(now + milliseconds(10), std::weak_ptr<CountingTarget>(kept), 2));
  timer.Add(now + milliseconds(20), std::weak_ptr<CountingTarget>(kept), 3);
  timer.Add(now + milliseconds(60), fired.Record(4));
  gone.reset();
  ASSERT_TRUE(fired.WaitFor(2, seconds(10)));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(fired.order(), (std::vector<int>{3, 4}));
}

}  // namespace
}  // namespace artune::transport
