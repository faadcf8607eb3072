#include "sweep_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "artune/transport/knobs.h"
#include "artune/tuner/goal.h"

namespace artune::dashboard {
namespace {

constexpr const char* kEagerKnob = "eager_threshold";
constexpr const char* kChunkKnob = "chunk_size";

// Knob text in the knob table's own format ("256B" and "256" are one value).
std::string Canonical(const std::string& knob_name, const std::string& text) {
  const transport::Knob* knob = transport::FindKnob(knob_name);
  if (knob == nullptr) return text;
  Result<uint64_t> value = transport::ParseKnobValue(*knob, text);
  return value.ok() ? transport::FormatKnobValue(*knob, *value) : text;
}

// The trial's value of `knob`: the swept value, else the value of its full config.
std::string AxisValue(const SweepTrial& trial, const std::string& knob) {
  if (auto it = trial.knobs.find(knob); it != trial.knobs.end()) {
    return Canonical(knob, it->second);
  }
  if (auto it = trial.config.find(knob); it != trial.config.end()) {
    return Canonical(knob, it->second);
  }
  return "?";
}

bool Usable(const SweepTrial& trial) {
  return trial.status == db::TrialStatus::kOk && trial.validated && std::isfinite(trial.objective);
}

// The sweep's stored goal ("min" | "max"); text the store never writes reads as min.
tuner::ObjectiveGoal Goal(const SweepInput& input) {
  return tuner::ParseGoal(input.goal).value_or(tuner::ObjectiveGoal::kMin);
}

// summary.cells over the axes in summary: each cell's best usable objective, its
// colour level among the usable cells, and the chosen config's cell marked.
void FillHeatmap(const SweepInput& input, SweepSummary& summary) {
  auto index_of = [](const std::vector<std::string>& axis, const std::string& value) {
    return static_cast<size_t>(std::find(axis.begin(), axis.end(), value) - axis.begin());
  };
  summary.cells.assign(summary.eager_values.size(),
                       std::vector<HeatCell>(summary.chunk_values.size()));
  std::optional<double> best_value, worst_value;
  for (const SweepTrial& trial : input.trials) {
    HeatCell& cell = summary.cells[index_of(summary.eager_values, AxisValue(trial, kEagerKnob))]
                                  [index_of(summary.chunk_values, AxisValue(trial, kChunkKnob))];
    cell.measured = true;
    if (!Usable(trial)) continue;
    if (!cell.usable || tuner::Better(Goal(input), trial.objective, cell.objective)) {
      cell.objective = trial.objective;
    }
    cell.usable = true;
  }
  for (auto& row : summary.cells) {
    for (HeatCell& cell : row) {
      if (!cell.usable) continue;
      if (!best_value || tuner::Better(Goal(input), cell.objective, *best_value)) {
        best_value = cell.objective;
      }
      if (!worst_value || tuner::Better(Goal(input), *worst_value, cell.objective)) {
        worst_value = cell.objective;
      }
    }
  }
  if (summary.chosen) {
    summary
        .cells[index_of(summary.eager_values, AxisValue(*summary.chosen, kEagerKnob))]
              [index_of(summary.chunk_values, AxisValue(*summary.chosen, kChunkKnob))]
        .chosen = true;
  }
  for (auto& row : summary.cells) {
    for (HeatCell& cell : row) {
      if (!cell.usable) continue;
      const double span = std::abs(*best_value - *worst_value);
      // 0 at the best value, 1 at the worst.
      const double distance = span > 0 ? std::abs(cell.objective - *best_value) / span : 0;
      cell.level = kHeatLevels - 1 -
                   static_cast<int>(std::lround(distance * static_cast<double>(kHeatLevels - 1)));
    }
  }
}

}  // namespace

std::vector<std::string> SortKnobValues(const std::string& knob_name,
                                        std::vector<std::string> values) {
  const transport::Knob* knob = transport::FindKnob(knob_name);
  auto key = [knob](const std::string& text) -> std::pair<int, uint64_t> {
    if (knob == nullptr) return {1, 0};
    Result<uint64_t> value = transport::ParseKnobValue(*knob, text);
    return value.ok() ? std::pair<int, uint64_t>{0, *value} : std::pair<int, uint64_t>{1, 0};
  };
  std::stable_sort(values.begin(), values.end(), [&](const std::string& a, const std::string& b) {
    auto ka = key(a), kb = key(b);
    if (ka != kb) return ka < kb;
    return a < b;
  });
  return values;
}

SweepSummary SummarizeSweep(const SweepInput& input) {
  SweepSummary summary;
  summary.id = input.id;
  summary.objective = input.objective;
  summary.goal = input.goal;
  summary.strategy = input.strategy;
  summary.workload = input.workload;
  summary.peer = input.peer;
  summary.fabric = input.fabric;
  summary.created_at = input.created_at;
  summary.finished = !input.finished_at.empty();
  summary.done = input.trials.size();
  summary.planned = input.planned_trials;
  if (!input.trials.empty()) summary.latest = input.trials.back();

  std::set<std::string> eager_set, chunk_set;
  for (const char* knob : {kEagerKnob, kChunkKnob}) {
    if (auto it = input.planned_axes.find(knob); it != input.planned_axes.end()) {
      for (const std::string& value : it->second) {
        (knob == kEagerKnob ? eager_set : chunk_set).insert(Canonical(knob, value));
      }
    }
  }
  for (const SweepTrial& trial : input.trials) {
    summary.trial_seconds += trial.duration_s;
    eager_set.insert(AxisValue(trial, kEagerKnob));
    chunk_set.insert(AxisValue(trial, kChunkKnob));
    if (!Usable(trial)) continue;
    ++summary.ok;
    if (!summary.best || tuner::Better(Goal(input), trial.objective, summary.best->objective)) {
      summary.best = trial;
    }
  }
  summary.eager_values = SortKnobValues(kEagerKnob, {eager_set.begin(), eager_set.end()});
  summary.chunk_values = SortKnobValues(kChunkKnob, {chunk_set.begin(), chunk_set.end()});

  if (!summary.finished && summary.planned && *summary.planned > summary.done && summary.done > 0) {
    const double mean = summary.trial_seconds / static_cast<double>(summary.done);
    summary.eta_s = mean * static_cast<double>(*summary.planned - summary.done);
  }

  summary.chosen = summary.best;
  if (summary.finished && !input.chosen_knobs.empty()) {
    for (const SweepTrial& trial : input.trials) {
      if (db::TrialKnobKey(trial.knobs) == input.chosen_knobs) summary.chosen = trial;
    }
  }
  FillHeatmap(input, summary);
  if (summary.finished) {
    summary.verdict = input.verdict;
    summary.default_remeasured = input.default_remeasured;
    summary.best_remeasured = input.best_remeasured;
  }
  return summary;
}

}  // namespace artune::dashboard
