// Adaptive polling's guard for busy hosts (fabric/spin_governor.h): when a spin
// counts as having lost its core, how back-offs grow and reset, and the host check.
#include "fabric/spin_governor.h"

#include "artune/transport/adaptive_polling.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

namespace artune::transport::fabric {
namespace {

using Clock = SpinGovernor::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

bool NeverBusy() { return false; }
bool AlwaysBusy() { return true; }

class SpinGovernorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    governor_.ResetForTesting();
    governor_.SetHostCheckForTesting(&NeverBusy);
  }
  void TearDown() override {
    governor_.ResetForTesting();
    governor_.SetHostCheckForTesting(&SpinGovernor::HostIsOversubscribed);
  }
  SpinGovernor& governor_ = SpinGovernor::Process();
  // Far from the real clock's zero, so that time points are never "unset".
  const Clock::time_point t0_ = Clock::time_point{} + std::chrono::hours(1);
};

TEST_F(SpinGovernorTest, ShortGapsKeepSpinningALongOneBacksOff) {
  SpinWatch watch;
  EXPECT_FALSE(watch.Observe(t0_));
  EXPECT_FALSE(watch.Observe(t0_ + microseconds(40)));
  EXPECT_FALSE(watch.Observe(t0_ + microseconds(40) + SpinGovernor::kLostCpuGap / 2));
  EXPECT_TRUE(governor_.MaySpin(t0_ + milliseconds(1)));

  const Clock::time_point lost = t0_ + milliseconds(5);
  EXPECT_TRUE(watch.Observe(lost));
  EXPECT_FALSE(governor_.MaySpin(lost));
  EXPECT_FALSE(governor_.MaySpin(lost + SpinGovernor::kMinBackOff - microseconds(1)));
  EXPECT_TRUE(governor_.MaySpin(lost + SpinGovernor::kMinBackOff));
}

TEST_F(SpinGovernorTest, ResetForgetsTheTimeASpinSlept) {
  SpinWatch watch;
  watch.Observe(t0_);
  watch.Reset();
  EXPECT_FALSE(watch.Observe(t0_ + std::chrono::seconds(3)));
  EXPECT_TRUE(governor_.MaySpin(t0_ + std::chrono::seconds(3)));
}

TEST_F(SpinGovernorTest, BackOffDoublesWhileSpinsKeepLosingAndStartsOverLater) {
  Clock::time_point now = t0_;
  auto expected = std::chrono::duration_cast<Clock::duration>(SpinGovernor::kMinBackOff);
  for (int i = 0; i < 8; ++i) {
    governor_.LostCpu(now);
    EXPECT_FALSE(governor_.MaySpin(now + expected - microseconds(1))) << "loss " << i;
    EXPECT_TRUE(governor_.MaySpin(now + expected)) << "loss " << i;
    // Lost again just after the period ended: the host is still busy.
    now += expected + milliseconds(1);
    expected = std::min<Clock::duration>(expected * 2, SpinGovernor::kMaxBackOff);
  }
  EXPECT_EQ(expected, std::chrono::duration_cast<Clock::duration>(SpinGovernor::kMaxBackOff));
  // A loss long after the last period: start over at the shortest.
  now += std::chrono::seconds(10);
  governor_.LostCpu(now);
  EXPECT_TRUE(governor_.MaySpin(now + SpinGovernor::kMinBackOff));
}

TEST_F(SpinGovernorTest, ALossDuringABackOffDoesNotLengthenIt) {
  governor_.LostCpu(t0_);
  const uint64_t before = governor_.back_offs();
  governor_.LostCpu(t0_ + milliseconds(5));
  EXPECT_EQ(governor_.back_offs(), before);
  EXPECT_TRUE(governor_.MaySpin(t0_ + SpinGovernor::kMinBackOff));
}

// What a benchmark reads to tell which mode adaptive polling was in (issue 26,
// ProcessAdaptiveBackOffs): each period counts once, and the current one only up to
// now. The periods below lie in the past but the last, which starts 5 ms ago.
TEST_F(SpinGovernorTest, TheTimeBackedOffCountsEachPeriodOnceAndOnlyUpToNow) {
  EXPECT_EQ(ProcessAdaptiveBackOffs().backed_off_ns, 0u);
  const uint64_t back_offs_before = ProcessAdaptiveBackOffs().back_offs;
  const Clock::time_point past = Clock::now() - std::chrono::seconds(10);
  governor_.LostCpu(past);
  governor_.LostCpu(past + milliseconds(5));  // within the period: not a second one
  // Lost again soon after it ended: a period twice as long.
  governor_.LostCpu(past + SpinGovernor::kMinBackOff + milliseconds(3));
  const auto ns = [](auto duration) {
    return static_cast<uint64_t>(std::chrono::nanoseconds(duration).count());
  };
  EXPECT_EQ(ProcessAdaptiveBackOffs().backed_off_ns, ns(3 * SpinGovernor::kMinBackOff));
  EXPECT_EQ(ProcessAdaptiveBackOffs().back_offs, back_offs_before + 2);

  // Long after: a period of the shortest length, of which 5 ms (and what this test
  // took since) have passed, and never more than its length.
  governor_.LostCpu(Clock::now() - milliseconds(5));
  const uint64_t now_backed_off = ProcessAdaptiveBackOffs().backed_off_ns;
  EXPECT_GE(now_backed_off, ns(3 * SpinGovernor::kMinBackOff + milliseconds(5)));
  EXPECT_LE(now_backed_off, ns(4 * SpinGovernor::kMinBackOff));
}

TEST_F(SpinGovernorTest, AnOversubscribedHostStopsSpinsAtTheSecondBusySample) {
  EXPECT_TRUE(governor_.MaySpin(t0_));
  governor_.SetHostCheckForTesting(&AlwaysBusy);
  // Within one sample period the host is not looked at again.
  EXPECT_TRUE(governor_.MaySpin(t0_ + SpinGovernor::kSampleEvery / 2));
  // One busy sample is not enough (a thread runnable for a moment).
  EXPECT_TRUE(governor_.MaySpin(t0_ + SpinGovernor::kSampleEvery));
  const Clock::time_point sampled = t0_ + 2 * SpinGovernor::kSampleEvery;
  EXPECT_FALSE(governor_.MaySpin(sampled));
  EXPECT_FALSE(governor_.MaySpin(sampled + SpinGovernor::kMinBackOff / 2));
  governor_.SetHostCheckForTesting(&NeverBusy);
  EXPECT_TRUE(governor_.MaySpin(sampled + SpinGovernor::kMinBackOff + SpinGovernor::kSampleEvery));
}

TEST_F(SpinGovernorTest, AnIdleSampleBetweenBusyOnesKeepsSpinning) {
  static std::atomic<int> calls{0};
  calls = 0;
  governor_.SetHostCheckForTesting([] { return calls.fetch_add(1) % 2 == 0; });
  for (int i = 1; i <= 10; ++i) {
    EXPECT_TRUE(governor_.MaySpin(t0_ + i * SpinGovernor::kSampleEvery)) << "sample " << i;
  }
  EXPECT_EQ(calls.load(), 10);
}

// The real check: with more spinning threads than this process's CPUs, the kernel's
// count of runnable threads says so.
TEST(SpinGovernorHostTest, MoreSpinnersThanCpusIsOversubscribed) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int spinners = CPU_COUNT(&set) + 2;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < spinners; ++i) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    seen = SpinGovernor::HostIsOversubscribed();
    std::this_thread::sleep_for(milliseconds(5));
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(seen) << spinners << " spinning threads were never seen runnable at once";
}

}  // namespace
}  // namespace artune::transport::fabric
