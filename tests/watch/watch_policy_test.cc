// The rate limits of `artune watch`: a gap between changes and a cap per hour.
#include "artune/watch/watch_policy.h"

#include <gtest/gtest.h>

namespace artune::watch {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

TEST(ChangeLog, KeepsTheGapBetweenChanges) {
  WatchPolicy policy;
  policy.min_gap = seconds(60);
  ChangeLog log;
  const auto t0 = WatchClock::time_point{} + std::chrono::hours(10);
  EXPECT_TRUE(log.MayChange(policy, t0, nullptr));
  log.Record(t0);
  std::string why;
  EXPECT_FALSE(log.MayChange(policy, t0 + seconds(59), &why));
  EXPECT_NE(why.find("--min-gap 60 s"), std::string::npos) << why;
  EXPECT_TRUE(log.MayChange(policy, t0 + seconds(60), nullptr));
}

TEST(ChangeLog, CapsTheChangesWithinAnyHour) {
  WatchPolicy policy;
  policy.min_gap = seconds(0);
  policy.max_changes_per_hour = 2;
  ChangeLog log;
  const auto t0 = WatchClock::time_point{} + std::chrono::hours(10);
  log.Record(t0);
  log.Record(t0 + minutes(10));
  std::string why;
  EXPECT_FALSE(log.MayChange(policy, t0 + minutes(30), &why));
  EXPECT_NE(why.find("--max-changes-per-hour 2"), std::string::npos) << why;
  EXPECT_NE(why.find("waiting 1800 s"), std::string::npos) << why;
  EXPECT_TRUE(log.MayChange(policy, t0 + minutes(60), nullptr));  // the first has aged out
  EXPECT_EQ(log.changes(), 2u);
}

TEST(ValidateWatchPolicy, NamesTheFlagOfAValueOutOfRange) {
  WatchPolicy policy;
  EXPECT_TRUE(ValidateWatchPolicy(policy).ok());
  policy.drift_threshold = 1.5;
  EXPECT_NE(ValidateWatchPolicy(policy).message().find("--drift"), std::string::npos);
  policy = WatchPolicy{};
  policy.max_changes_per_hour = 0;
  EXPECT_NE(ValidateWatchPolicy(policy).message().find("--dry-run"), std::string::npos);
  policy = WatchPolicy{};
  policy.min_margin = -0.1;
  EXPECT_NE(ValidateWatchPolicy(policy).message().find("--min-margin"), std::string::npos);
}

}  // namespace
}  // namespace artune::watch
