// A sweep: a strategy walks the search space, each point is measured once by a
// TrialTarget and stored as its own trial, and the best validated trial wins.
//
// Storage and resume: the sweep record is stored first; every trial is committed
// on its own the moment it is measured (store.h), keyed by its knob values. Resuming
// (RunSweep with an existing sweep id) answers every point already stored from the
// store and measures only the rest, so after kill -9 no finished trial is repeated
// and none is lost. The transport's default config is measured first (the
// "default" of the report); when it is on the grid the strategy reuses it.
//
// Cold start: the first measurements over a fresh path (connections, allocator,
// caches on both ends) are slower than the rest and would make the default, measured
// first, look beaten. So before the first trial this call measures (fresh or
// resumed) the workload runs unmeasured under the base config until it is stable
// (TrialTarget::WarmUp).
//
// Final round and verdict: after the search the best few configs and the default
// are measured again in interleaved rounds (final_round.h), and the winner is the
// finalist with the best pooled measurement there, not the best search trial. The
// sweep decides (DecideVerdict) on those numbers and stores the verdict with the
// pooled measurements (Store::RecordSweepVerdict; not trials: the store keeps one
// trial per knob point), then marks the sweep finished. A resumed sweep runs its
// final round again and replaces the verdict. Readers get it as
// SweepRecord::verdict; `artune apply` applies the verdict's best_knobs.
//
// Threading: runs on the calling thread; `progress` is called there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/final_round.h"
#include "artune/tuner/goal.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/strategy.h"
#include "artune/tuner/trial.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

struct SweepProgress {
  // The final round (final_round.h) reports its measurements as trials numbered on
  // from the search's, with `final_round` set and last_knobs the config measured.
  bool final_round = false;
  size_t trial = 0;      // trials done so far (stored ones included)
  size_t estimated = 0;  // the strategy's estimate of the total
  bool resumed = false;  // this trial came from the store, not a measurement
  double elapsed_s = 0;  // since RunSweep began
  double eta_s = 0;      // by the mean time of the trials measured in this run
  std::optional<double> best_objective;
  std::string best_knobs;  // TrialKnobKey of the best so far
  std::string last_knobs;
};
using SweepProgressFn = std::function<void(const SweepProgress&)>;

struct SweepOptions {
  WarmupOptions warmup;  // before the first measured trial of this call
  // Run the final round after the search (false: the verdict compares the search's
  // own trials, best against the default's).
  bool remeasure_default = true;
  FinalRoundOptions final_round;
};

struct SweepOutcome {
  db::SweepRecord sweep;
  std::vector<db::TrialRecord> trials;  // in stored order
  // The winner's stored trial: the config the verdict chose (best_knobs) — the best
  // finalist of the final round, or the default when it measured best there; the
  // best search trial without a final round. nullopt without a valid trial.
  std::optional<db::TrialRecord> best;
  std::optional<db::TrialRecord> search_best;    // best validated "ok" trial of the search
  std::optional<db::TrialRecord> default_trial;  // the transport's defaults, measured
  size_t measured = 0;                           // trials measured by this call
  size_t resumed = 0;                            // points answered from the store
  std::optional<WarmupReport> warmup;            // nullopt when this call measured nothing
  // From the final round (not stored as trials: id 0): the default's and the
  // winner's pooled measurements; nullopt without a final round (no other valid
  // config, or SweepOptions::remeasure_default false). best_remeasured is also
  // nullopt when the default won the final round.
  std::optional<db::TrialRecord> default_remeasured;
  std::optional<db::TrialRecord> best_remeasured;
  // WinnerPairs of the final round; nullopt without one or with too few pairs.
  std::optional<PairedVerdict> winner_pairs;
  // The verdict (DecideVerdict) is beats_default.
  // Equal to sweep.verdict->best_beats_default().
  bool best_beats_default = false;
  // `sweep` as read back after the verdict was stored: sweep.verdict is set, with
  // the final round's finalists.
};

// What the verdict is decided on.
struct VerdictEvidence {
  std::optional<db::TrialRecord> search_best;    // as Store::BestTrial gives it
  std::optional<db::TrialRecord> default_trial;  // the default's stored trial
  std::optional<FinalRoundResult> final_round;   // nullopt when none was run
};

// The verdict RunSweep stores; `default_knobs` is the default's knob key.
//   no_valid_trial  without a search best;
// With a final round whose winner (its first finalist) is "ok" and validated:
//   default_is_best when the default's pooled measurement is "ok" and validated
//                   and the winner is no better: the median of its same-round
//                   pairs (WinnerPairs) is at most 1x, or, with too few pairs, its
//                   pooled objective is no better (best_knobs: the default's);
//   beats_default   when the winner won more than half of the rounds and is
//                   better beyond noise: by its same-round pairs with the default
//                   (WinnerPairs: the interval of their median clears 1) when it
//                   has kMinPairsForVerdict of them, else by its pooled interval
//                   being clear of the default's (BeatsDefault);
//   within_noise    otherwise (best_knobs: the winner's).
// With a final round whose finalists all failed or corrupted: within_noise, with
// the search best's knobs (it is not reliable).
// Without a final round (no valid config besides the default, or none run):
//   default_is_best when the search best is the default; else beats_default when
//   it is ok and BeatsDefault holds against `default_trial` (any valid best beats a
//   default never measured), within_noise otherwise.
// The search-time numbers do not enter a verdict with a final round: they carry
// the drift between the start and the end of the sweep (in the lab a default
// measured 0.107 s first and 0.177 s at the end) and the winner's curse.
// default_remeasured, best_remeasured (the winner's pooled record, unless the
// default won), final_rounds and finalists are filled from the final round;
// decided_at is left empty (the store stamps it). Pure.
db::SweepVerdict DecideVerdict(const VerdictEvidence& evidence, const std::string& default_knobs,
                               ObjectiveGoal goal);

// The final round's winner (its first finalist) judged on its same-round pairs
// with the default (FinalRoundResult::paired_speedups, JudgePairedSpeedups);
// nullopt with fewer than kMinPairsForVerdict pairs or no finalist. Pairs cancel
// the drift that widens pooled intervals: in the lab the host's speed moves by
// ±25 % within a minute (bench/loop.md).
std::optional<PairedVerdict> WinnerPairs(const FinalRoundResult& final_round);

// True when `best` beats `default_trial` by more than the overlap of their
// confidence intervals: lower is better, best.ci_high < default.ci_low; higher,
// best.ci_low > default.ci_high. A default that is not "ok" and validated is beaten
// by any best that is; a best that is not "ok" and validated never beats anything.
bool BeatsDefault(const db::TrialRecord& best, const db::TrialRecord& default_trial,
                  ObjectiveGoal goal);

// The cost the strategy minimises for a stored trial: objective (or its negation
// for throughputs); std::nullopt for a trial that is not "ok" and validated.
std::optional<double> TrialCost(const db::TrialRecord& trial, ObjectiveGoal goal);

// Runs (or, when `sweep.id` names a stored sweep, resumes) the sweep, stores its
// verdict (replacing a resumed sweep's) and marks it finished.
// `sweep` carries what is stored: objective, strategy, workload description,
// search space, base config...; the caller fills it (a resumed sweep: as read
// back). Errors: the store's (a trial or verdict that cannot be stored stops the
// sweep, which is then left unfinished), the
// strategy's, kInvalidArgument for a sweep whose stored search space no longer
// parses.
Result<SweepOutcome> RunSweep(db::Store& store, TrialTarget& target, const Workload& workload,
                              const SearchSpace& space, const transport::Config& base,
                              db::SweepRecord sweep, const SweepProgressFn& progress,
                              const SweepOptions& options = {});

}  // namespace artune::tuner
