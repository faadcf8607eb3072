#include "artune/tuner/sweep.h"

#include <chrono>
#include <map>
#include <set>

namespace artune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

// The swept knobs at the values `config` has (the default point may be off-grid).
std::map<std::string, std::string> KnobValuesOf(const SearchSpace& space,
                                                const transport::Config& config) {
  std::map<std::string, std::string> values;
  for (const KnobAxis& axis : space.axes) {
    values.emplace(std::string(axis.name()),
                   transport::FormatKnobValue(*axis.knob, axis.knob->get(config)));
  }
  return values;
}

}  // namespace

std::optional<double> TrialCost(const db::TrialRecord& trial, bool lower_is_better) {
  if (trial.status != "ok" || !trial.validated) return std::nullopt;
  return lower_is_better ? trial.objective : -trial.objective;
}

Result<SweepOutcome> RunSweep(db::Store& store, TrialTarget& target, const Workload& workload,
                              const SearchSpace& space, const transport::Config& base,
                              db::SweepRecord sweep, const SweepProgressFn& progress) {
  ARTUNE_ASSIGN_OR_RETURN(Objective objective, ParseObjective(sweep.objective));
  const bool lower_is_better = LowerIsBetter(objective);
  const std::map<std::string, std::string> default_knobs = KnobValuesOf(space, base);

  SweepOutcome outcome;
  std::map<std::string, db::TrialRecord> stored;  // knob key -> trial
  if (sweep.id == 0) {
    sweep.goal = lower_is_better ? "min" : "max";
    sweep.search_space = space.Canonical();
    sweep.default_knobs = db::TrialKnobKey(default_knobs);
    sweep.base_config = transport::ConfigToMap(base);
    ARTUNE_ASSIGN_OR_RETURN(sweep.id, store.InsertSweep(sweep));
  } else {
    ARTUNE_ASSIGN_OR_RETURN(std::vector<db::TrialRecord> trials, store.ListTrials(sweep.id));
    for (db::TrialRecord& trial : trials) {
      std::string key = db::TrialKnobKey(trial.knobs);
      stored.emplace(std::move(key), std::move(trial));
    }
  }
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<Strategy> strategy,
                          MakeStrategy(sweep.strategy, space.AxisSizes(), space.Nearest(base)));

  const auto started = Clock::now();
  double measuring_s = 0;
  size_t done = 0;
  std::optional<double> best_cost;
  std::string best_key;
  std::set<std::string> visited;  // knob keys this run has counted
  const size_t estimated = strategy->EstimatedTrials() + 1;

  // Measures (or reads back) one point given as knob values and config.
  auto run_point = [&](const std::map<std::string, std::string>& knobs,
                       const transport::Config& config) -> Result<std::optional<double>> {
    const std::string key = db::TrialKnobKey(knobs);
    auto known = stored.find(key);
    // The default point measured first is visited again when it lies on the grid.
    if (!visited.insert(key).second) return TrialCost(known->second, lower_is_better);
    bool resumed = false;
    if (known != stored.end()) {
      resumed = true;
      ++outcome.resumed;
    } else {
      const auto trial_start = Clock::now();
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement measured, target.Measure(config, workload));
      measuring_s += std::chrono::duration<double>(Clock::now() - trial_start).count();
      db::TrialRecord trial;
      trial.sweep_id = sweep.id;
      trial.knobs = knobs;
      trial.status = measured.status;
      trial.objective = measured.objective;
      trial.ci_low = measured.ci_low;
      trial.ci_high = measured.ci_high;
      trial.samples = measured.samples;
      trial.remeasured = measured.remeasured;
      trial.validated = measured.validated;
      trial.error = measured.error;
      trial.duration_s = measured.duration_s;
      trial.config = measured.config.empty() ? transport::ConfigToMap(config) : measured.config;
      trial.metrics = measured.metrics;
      ARTUNE_ASSIGN_OR_RETURN(trial.id, store.InsertTrial(trial));
      ++outcome.measured;
      known = stored.emplace(key, std::move(trial)).first;
    }
    ++done;
    const std::optional<double> cost = TrialCost(known->second, lower_is_better);
    if (cost && (!best_cost || *cost < *best_cost)) {
      best_cost = cost;
      best_key = key;
    }
    if (progress) {
      SweepProgress report;
      report.trial = done;
      report.estimated = std::max(estimated, done);
      report.resumed = resumed;
      report.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
      if (outcome.measured > 0) {
        report.eta_s = measuring_s / static_cast<double>(outcome.measured) *
                       static_cast<double>(report.estimated - done);
      }
      if (best_cost) report.best_objective = lower_is_better ? *best_cost : -*best_cost;
      report.best_knobs = best_key;
      report.last_knobs = key;
      progress(report);
    }
    return cost;
  };

  // The default config first: the baseline every report compares against.
  ARTUNE_RETURN_IF_ERROR(run_point(default_knobs, base).status());
  ARTUNE_RETURN_IF_ERROR(strategy->Search([&](const Point& point) {
    return run_point(space.KnobValues(point), space.Apply(point, base));
  }));
  ARTUNE_RETURN_IF_ERROR(store.FinishSweep(sweep.id));

  ARTUNE_ASSIGN_OR_RETURN(outcome.sweep, store.GetSweep(sweep.id));
  ARTUNE_ASSIGN_OR_RETURN(outcome.trials, store.ListTrials(sweep.id));
  ARTUNE_ASSIGN_OR_RETURN(outcome.best, store.BestTrial(sweep.id));
  for (const db::TrialRecord& trial : outcome.trials) {
    if (db::TrialKnobKey(trial.knobs) == outcome.sweep.default_knobs) outcome.default_trial = trial;
  }
  return outcome;
}

}  // namespace artune::tuner
