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
// (TrialTarget::WarmUp), and at the end the default is measured once more so that
// the best is also judged against the default as it is after the search (load
// drifts). A best that does not beat both measurements of the default beyond the
// overlap of their confidence intervals is not "better"
// (SweepOutcome::best_beats_default).
//
// Verdict: at the end the sweep decides (DecideVerdict) and stores the verdict with
// the re-measured default (Store::RecordSweepVerdict; not a trial: the store keeps
// one trial per knob point), then marks the sweep finished. A resumed sweep
// re-measures and replaces it. Readers get it as SweepRecord::verdict.
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
#include "artune/tuner/search_space.h"
#include "artune/tuner/strategy.h"
#include "artune/tuner/trial.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

struct SweepProgress {
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
  WarmupOptions warmup;           // before the first measured trial of this call
  bool remeasure_default = true;  // measure the default again after the search
};

struct SweepOutcome {
  db::SweepRecord sweep;
  std::vector<db::TrialRecord> trials;           // in stored order
  std::optional<db::TrialRecord> best;           // best validated "ok" trial
  std::optional<db::TrialRecord> default_trial;  // the transport's defaults, measured
  size_t measured = 0;                           // trials measured by this call
  size_t resumed = 0;                            // points answered from the store
  std::optional<WarmupReport> warmup;            // nullopt when this call measured nothing
  // The default measured again after the search (stored with the verdict, not as
  // a trial: id 0); nullopt when SweepOptions::remeasure_default is false.
  std::optional<db::TrialRecord> default_remeasured;
  // The best trial's config measured again just before that (not stored as a trial);
  // nullopt without a re-measurement, without a best, or when the best is the default.
  std::optional<db::TrialRecord> best_remeasured;
  // The verdict (DecideVerdict) is beats_default.
  // Equal to sweep.verdict->best_beats_default().
  bool best_beats_default = false;
  // `sweep` as read back after the verdict was stored: sweep.verdict is set.
};

// The verdict RunSweep stores. `best` as Store::BestTrial gives it; `default_trial`
// the stored trial whose knob key is `default_knobs` (nullopt when the sweep has
// none); `default_remeasured` the default measured again (nullopt when not).
// no_valid_trial without a best; default_is_best when the best's knob key is
// `default_knobs`; else beats_default when BeatsDefault holds against
// `default_trial` AND at the end of the sweep, when the default's re-measurement is
// "ok" and validated: `best_remeasured` (the best measured again just before it)
// against it when given, else `best` against it. Load drifts during a sweep and
// the best of many noisy trials is optimistic, so the best must beat the default
// at both ends, and at the end in a fresh back-to-back pair. With no default
// measured at all any valid best beats it; within_noise otherwise. Both
// re-measurements are carried into the verdict; decided_at is left empty (the
// store stamps it). Pure.
db::SweepVerdict DecideVerdict(const std::optional<db::TrialRecord>& best,
                               const std::optional<db::TrialRecord>& default_trial,
                               const std::optional<db::TrialRecord>& default_remeasured,
                               const std::string& default_knobs, bool lower_is_better,
                               const std::optional<db::TrialRecord>& best_remeasured = {});

// True when `best` beats `default_trial` by more than the overlap of their
// confidence intervals: lower is better, best.ci_high < default.ci_low; higher,
// best.ci_low > default.ci_high. A default that is not "ok" and validated is beaten
// by any best that is; a best that is not "ok" and validated never beats anything.
bool BeatsDefault(const db::TrialRecord& best, const db::TrialRecord& default_trial,
                  bool lower_is_better);

// The cost the strategy minimises for a stored trial: objective (or its negation
// for throughputs); std::nullopt for a trial that is not "ok" and validated.
std::optional<double> TrialCost(const db::TrialRecord& trial, bool lower_is_better);

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
