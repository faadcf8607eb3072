#include "artune/tuner/sweep.h"

#include <chrono>
#include <map>
#include <set>

#include "artune/transport/knobs.h"

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

// A trial record (sweep_id set, not stored) from a measurement of `config`.
db::TrialRecord RecordOf(int64_t sweep_id, const std::map<std::string, std::string>& knobs,
                         const transport::Config& config, const TrialMeasurement& measured) {
  db::TrialRecord trial;
  trial.sweep_id = sweep_id;
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
  return trial;
}

}  // namespace

bool BeatsDefault(const db::TrialRecord& best, const db::TrialRecord& default_trial,
                  ObjectiveGoal goal) {
  if (!OkAndValidated(best)) return false;
  if (!OkAndValidated(default_trial)) return true;
  return goal == ObjectiveGoal::kMin ? best.ci_high < default_trial.ci_low
                                     : best.ci_low > default_trial.ci_high;
}

std::optional<PairedVerdict> WinnerPairs(const FinalRoundResult& final_round) {
  if (final_round.finalists.empty()) return std::nullopt;
  const auto pairs = final_round.paired_speedups.find(
      db::TrialKnobKey(final_round.finalists.front().pooled.knobs));
  if (pairs == final_round.paired_speedups.end() || pairs->second.size() < kMinPairsForVerdict) {
    return std::nullopt;
  }
  return JudgePairedSpeedups(pairs->second);
}

db::SweepVerdict DecideVerdict(const VerdictEvidence& evidence, const std::string& default_knobs,
                               ObjectiveGoal goal) {
  db::SweepVerdict verdict;
  if (!evidence.search_best) {
    verdict.verdict = db::Verdict::kNoValidTrial;
    return verdict;
  }
  const db::TrialRecord& search_best = *evidence.search_best;
  if (evidence.final_round) {
    const FinalRoundResult& final_round = *evidence.final_round;
    verdict.final_rounds = final_round.rounds;
    verdict.finalists = final_round.finalists;
    verdict.default_remeasured = final_round.default_pooled;
    const db::FinalistRecord* winner =
        final_round.finalists.empty() || !OkAndValidated(final_round.finalists.front().pooled)
            ? nullptr
            : &final_round.finalists.front();
    if (winner == nullptr) {
      // Every finalist failed or corrupted when measured again: none is reliable.
      verdict.best_knobs = db::TrialKnobKey(search_best.knobs);
      verdict.verdict = verdict.best_knobs == default_knobs ? db::Verdict::kDefaultIsBest
                                                            : db::Verdict::kWithinNoise;
      return verdict;
    }
    const db::TrialRecord& default_pooled = final_round.default_pooled;
    const bool default_ok = OkAndValidated(default_pooled);
    // With enough same-round pairs they decide whether the winner is better at all:
    // in the lab a winner 8 % faster by pooled medians was 1 % slower by its pairs,
    // and 15 % slower in the compare that followed (bench/loop.md, run 11).
    const std::optional<PairedVerdict> paired = WinnerPairs(final_round);
    const bool default_won =
        default_ok && (paired ? paired->estimate.median <= 1
                              : !Better(goal, winner->pooled.objective, default_pooled.objective));
    if (default_won) {
      verdict.best_knobs = default_knobs;
      verdict.verdict = db::Verdict::kDefaultIsBest;
      return verdict;
    }
    verdict.best_knobs = db::TrialKnobKey(winner->pooled.knobs);
    verdict.best_remeasured = winner->pooled;
    // The winner must be better in most rounds and, with enough same-round pairs
    // (WinnerPairs), better beyond noise by the pairs' median; else, from targets
    // without samples, clear of the default's pooled interval.
    const bool clear = paired ? paired->outcome == PairedOutcome::kFaster
                              : BeatsDefault(winner->pooled, default_pooled, goal);
    const bool beats = clear && 2 * winner->rounds_won > final_round.rounds;
    verdict.verdict = beats ? db::Verdict::kBeatsDefault : db::Verdict::kWithinNoise;
    return verdict;
  }
  verdict.best_knobs = db::TrialKnobKey(search_best.knobs);
  if (verdict.best_knobs == default_knobs) {
    verdict.verdict = db::Verdict::kDefaultIsBest;
    return verdict;
  }
  bool beats = OkAndValidated(search_best);
  if (evidence.default_trial) {
    beats = beats && BeatsDefault(search_best, *evidence.default_trial, goal);
  }
  verdict.verdict = beats ? db::Verdict::kBeatsDefault : db::Verdict::kWithinNoise;
  return verdict;
}

std::optional<double> TrialCost(const db::TrialRecord& trial, ObjectiveGoal goal) {
  if (trial.status != db::TrialStatus::kOk || !trial.validated) return std::nullopt;
  return goal == ObjectiveGoal::kMin ? trial.objective : -trial.objective;
}

namespace {

// A new sweep is stored with what it searches; a resumed one (sweep.id set) gives
// back its stored trials by knob key, so they are read back instead of measured.
Result<std::map<std::string, db::TrialRecord>> OpenSweep(
    db::Store& store, db::SweepRecord& sweep, const SearchSpace& space,
    const transport::Config& base, ObjectiveGoal goal,
    const std::map<std::string, std::string>& default_knobs) {
  std::map<std::string, db::TrialRecord> stored;
  if (sweep.id == 0) {
    sweep.goal = GoalName(goal);
    sweep.search_space = space.Canonical();
    sweep.default_knobs = db::TrialKnobKey(default_knobs);
    sweep.base_config = transport::ConfigToMap(base);
    ARTUNE_ASSIGN_OR_RETURN(sweep.id, store.InsertSweep(sweep));
    return stored;
  }
  ARTUNE_ASSIGN_OR_RETURN(std::vector<db::TrialRecord> trials, store.ListTrials(sweep.id));
  for (db::TrialRecord& trial : trials) {
    std::string key = db::TrialKnobKey(trial.knobs);
    stored.emplace(std::move(key), std::move(trial));
  }
  return stored;
}

// How far one RunSweep call has come: what its progress reports say.
struct SweepTally {
  ObjectiveGoal goal;
  Clock::time_point started = Clock::now();
  double measuring_s = 0;  // in this call's measurements
  size_t measured = 0;     // points measured (not read back) in this call
  size_t done = 0;         // points counted in this call
  std::optional<double> best_cost;
  std::string best_key;

  void Count(const std::string& key, std::optional<double> cost) {
    ++done;
    if (cost && (!best_cost || *cost < *best_cost)) {
      best_cost = cost;
      best_key = key;
    }
  }
  // A report at `trial` of `estimated`, with `remaining` measurements still to make
  // (for the estimate, at this call's mean time per measurement).
  SweepProgress Report(size_t trial, size_t estimated, size_t remaining,
                       const std::string& last_knobs) const {
    SweepProgress report;
    report.trial = trial;
    report.estimated = estimated;
    report.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    if (measured > 0) {
      report.eta_s = measuring_s / static_cast<double>(measured) * static_cast<double>(remaining);
    }
    if (best_cost) report.best_objective = goal == ObjectiveGoal::kMin ? *best_cost : -*best_cost;
    report.best_knobs = best_key;
    report.last_knobs = last_knobs;
    return report;
  }
};

// The search's trials, its best and the default's trial, as stored: the final
// round's measurements are not trials, so these are final once the search is.
Status ReadSearchResult(db::Store& store, const db::SweepRecord& sweep, SweepOutcome& outcome) {
  ARTUNE_ASSIGN_OR_RETURN(outcome.trials, store.ListTrials(sweep.id));
  ARTUNE_ASSIGN_OR_RETURN(outcome.search_best, store.BestTrial(sweep.id));
  for (const db::TrialRecord& trial : outcome.trials) {
    if (db::TrialKnobKey(trial.knobs) == sweep.default_knobs) outcome.default_trial = trial;
  }
  return Status::Ok();
}

// The final round over `finalists` (final_round.h), its measurements reported as
// trials numbered on from the search's.
Result<FinalRoundResult> MeasureFinalRound(TrialTarget& target, const Workload& workload,
                                           const transport::Config& base, int64_t sweep_id,
                                           const std::map<std::string, std::string>& default_knobs,
                                           const std::vector<db::TrialRecord>& finalists,
                                           const SweepTally& tally, const SweepProgressFn& progress,
                                           const SweepOptions& options) {
  auto on_measurement = [&](size_t measurement, size_t total, const std::string& knobs) {
    if (!progress) return;
    SweepProgress report =
        tally.Report(tally.done + measurement, tally.done + total, total - measurement + 1, knobs);
    report.final_round = true;
    progress(report);
  };
  return RunFinalRound(target, workload, base, sweep_id, default_knobs, finalists, tally.goal,
                       options.final_round, on_measurement);
}

// The verdict from the evidence, stored with the sweep's end; fills the outcome's
// verdict fields and the sweep as stored.
Status ConcludeSweep(db::Store& store, int64_t sweep_id, const std::string& default_key,
                     ObjectiveGoal goal, const VerdictEvidence& evidence, SweepOutcome& outcome) {
  const db::SweepVerdict verdict = DecideVerdict(evidence, default_key, goal);
  outcome.default_remeasured = verdict.default_remeasured;
  outcome.best_remeasured = verdict.best_remeasured;
  if (evidence.final_round) outcome.winner_pairs = WinnerPairs(*evidence.final_round);
  for (const db::TrialRecord& trial : outcome.trials) {
    if (!verdict.best_knobs.empty() && db::TrialKnobKey(trial.knobs) == verdict.best_knobs) {
      outcome.best = trial;
    }
  }
  outcome.best_beats_default = verdict.best_beats_default();
  ARTUNE_RETURN_IF_ERROR(store.RecordSweepVerdict(sweep_id, verdict));
  ARTUNE_RETURN_IF_ERROR(store.FinishSweep(sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(outcome.sweep, store.GetSweep(sweep_id));
  return Status::Ok();
}

}  // namespace

Result<SweepOutcome> RunSweep(db::Store& store, TrialTarget& target, const Workload& workload,
                              const SearchSpace& space, const transport::Config& base,
                              db::SweepRecord sweep, const SweepProgressFn& progress,
                              const SweepOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateWarmupOptions(options.warmup));
  if (options.remeasure_default) {
    ARTUNE_RETURN_IF_ERROR(ValidateFinalRoundOptions(options.final_round));
  }
  ARTUNE_ASSIGN_OR_RETURN(Objective objective, ParseObjective(sweep.objective));
  const ObjectiveGoal goal = LowerIsBetter(objective) ? ObjectiveGoal::kMin : ObjectiveGoal::kMax;
  const std::map<std::string, std::string> default_knobs = KnobValuesOf(space, base);
  ARTUNE_ASSIGN_OR_RETURN(auto stored,  // knob key -> trial
                          OpenSweep(store, sweep, space, base, goal, default_knobs));
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<Strategy> strategy,
                          MakeStrategy(sweep.strategy, space.AxisSizes(), space.Nearest(base)));

  SweepOutcome outcome;
  SweepTally tally{goal};
  std::set<std::string> visited;  // knob keys this run has counted
  const size_t estimated = strategy->EstimatedTrials() + 1;

  // Warms the path under the base config once, before this call's first measurement
  // (a resumed sweep starts as cold as a fresh one).
  auto warm_up_once = [&]() -> Status {
    if (outcome.warmup) return Status::Ok();
    ARTUNE_ASSIGN_OR_RETURN(outcome.warmup, target.WarmUp(base, workload, options.warmup));
    return Status::Ok();
  };

  // Measures (or reads back) one point given as knob values and config.
  auto run_point = [&](const std::map<std::string, std::string>& knobs,
                       const transport::Config& config) -> Result<std::optional<double>> {
    const std::string key = db::TrialKnobKey(knobs);
    auto known = stored.find(key);
    // The default point measured first is visited again when it lies on the grid.
    if (!visited.insert(key).second) return TrialCost(known->second, goal);
    const bool resumed = known != stored.end();
    if (resumed) {
      ++outcome.resumed;
    } else {
      ARTUNE_RETURN_IF_ERROR(warm_up_once());
      const auto trial_start = Clock::now();
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement measured, target.Measure(config, workload));
      tally.measuring_s += std::chrono::duration<double>(Clock::now() - trial_start).count();
      db::TrialRecord trial = RecordOf(sweep.id, knobs, config, measured);
      ARTUNE_ASSIGN_OR_RETURN(trial.id, store.InsertTrial(trial));
      ++outcome.measured;
      ++tally.measured;
      known = stored.emplace(key, std::move(trial)).first;
    }
    const std::optional<double> cost = TrialCost(known->second, goal);
    tally.Count(key, cost);
    if (progress) {
      const size_t total = std::max(estimated, tally.done);
      SweepProgress report = tally.Report(tally.done, total, total - tally.done, key);
      report.resumed = resumed;
      progress(report);
    }
    return cost;
  };

  // The default config first: the baseline every report compares against.
  ARTUNE_RETURN_IF_ERROR(run_point(default_knobs, base).status());
  ARTUNE_RETURN_IF_ERROR(strategy->Search([&](const Point& point) {
    return run_point(space.KnobValues(point), space.Apply(point, base));
  }));
  ARTUNE_RETURN_IF_ERROR(ReadSearchResult(store, sweep, outcome));
  VerdictEvidence evidence{outcome.search_best, outcome.default_trial, std::nullopt};
  const std::vector<db::TrialRecord> finalists =
      PickFinalists(outcome.trials, sweep.default_knobs, goal, options.final_round.finalists);
  if (options.remeasure_default && !finalists.empty()) {
    ARTUNE_RETURN_IF_ERROR(warm_up_once());
    ARTUNE_ASSIGN_OR_RETURN(evidence.final_round,
                            MeasureFinalRound(target, workload, base, sweep.id, default_knobs,
                                              finalists, tally, progress, options));
  }
  ARTUNE_RETURN_IF_ERROR(
      ConcludeSweep(store, sweep.id, sweep.default_knobs, goal, evidence, outcome));
  return outcome;
}

}  // namespace artune::tuner
