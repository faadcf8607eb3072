// Which way an objective is better, and the one comparison of two objective values
// that the search, the final round, the cluster analysis and the views all use.
#pragma once

#include <optional>
#include <string_view>

namespace artune::tuner {

// Latencies and times are minimised, throughputs maximised.
enum class ObjectiveGoal { kMin, kMax };

// The goal's stored text, db::SweepRecord::goal: "min" or "max" (the store refuses
// any other, so old stores read back the same).
std::string_view GoalName(ObjectiveGoal goal);
// The inverse of GoalName; nullopt for any other text.
std::optional<ObjectiveGoal> ParseGoal(std::string_view text);

// Whether objective `a` is strictly better than `b` under `goal`: a tie is not
// better, so among equals the one met first stays. Pure.
bool Better(ObjectiveGoal goal, double a, double b);

}  // namespace artune::tuner
