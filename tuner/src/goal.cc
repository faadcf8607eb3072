#include "artune/tuner/goal.h"

#include <utility>

namespace artune::tuner {
namespace {

// The one table between a goal and its stored text.
constexpr std::pair<ObjectiveGoal, std::string_view> kGoalNames[] = {
    {ObjectiveGoal::kMin, "min"},
    {ObjectiveGoal::kMax, "max"},
};

}  // namespace

std::string_view GoalName(ObjectiveGoal goal) {
  for (const auto& [value, name] : kGoalNames) {
    if (value == goal) return name;
  }
  return "min";
}

std::optional<ObjectiveGoal> ParseGoal(std::string_view text) {
  for (const auto& [value, name] : kGoalNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

bool Better(ObjectiveGoal goal, double a, double b) {
  return goal == ObjectiveGoal::kMin ? a < b : a > b;
}

}  // namespace artune::tuner
