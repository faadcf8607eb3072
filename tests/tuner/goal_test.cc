// The one typed goal and the one Better (tuner/goal.h).
#include "artune/tuner/goal.h"

#include <gtest/gtest.h>

namespace artune::tuner {
namespace {

TEST(Goal, NamesAreTheStoredTextBothWays) {
  // The text db::SweepRecord::goal has always held: stores written before the
  // enum read back the same.
  EXPECT_EQ(GoalName(ObjectiveGoal::kMin), "min");
  EXPECT_EQ(GoalName(ObjectiveGoal::kMax), "max");
  for (ObjectiveGoal goal : {ObjectiveGoal::kMin, ObjectiveGoal::kMax}) {
    EXPECT_EQ(ParseGoal(GoalName(goal)), goal);
  }
  for (const char* other : {"", "MIN", "maximum", "min "}) {
    EXPECT_EQ(ParseGoal(other), std::nullopt) << other;
  }
}

TEST(Goal, BetterIsStrictInTheGoalsDirection) {
  EXPECT_TRUE(Better(ObjectiveGoal::kMin, 1, 2));
  EXPECT_FALSE(Better(ObjectiveGoal::kMin, 2, 1));
  EXPECT_TRUE(Better(ObjectiveGoal::kMax, 2, 1));
  EXPECT_FALSE(Better(ObjectiveGoal::kMax, 1, 2));
  // A tie is not better: among equals the one met first stays.
  EXPECT_FALSE(Better(ObjectiveGoal::kMin, 3, 3));
  EXPECT_FALSE(Better(ObjectiveGoal::kMax, 3, 3));
}

}  // namespace
}  // namespace artune::tuner
