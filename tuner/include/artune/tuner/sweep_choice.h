// Which config a stored sweep hands on, shared by `artune apply config --sweep` and
// `artune apply compare --sweep` so both apply the same knobs.
//
// A sweep's stored verdict names the config it judged (SweepVerdict::best_knobs):
// the sweep re-measures its finalists at the end and picks among them, so that
// config can differ from Store::BestTrial (the single best measurement of the
// search, which is optimistic: the best of many noisy trials). The verdict's pick
// wins when there is one; a sweep without a verdict naming knobs (unfinished, or
// decided by a build before verdicts) falls back to its best trial.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"

namespace artune::tuner {

// Opens the store for a caller that reads one only when a request names a stored
// sweep, capture or cluster run (compare_plan.h, config_proposal.h).
using StoreOpener = std::function<Result<std::unique_ptr<db::Store>>()>;

struct SweepChoice {
  db::SweepRecord sweep;
  std::map<std::string, std::string> knobs;  // the swept knobs to apply
  // The stored trial with exactly these knobs (status ok and validated); nullopt
  // only when the verdict names knobs none of the sweep's trials has.
  std::optional<db::TrialRecord> trial;
  bool chosen_by_verdict = false;  // false: Store::BestTrial

  // "chosen by the sweep's final re-measurement" or "best trial #N".
  std::string How() const;
  // "eager_threshold=4KiB chunk_size=1MiB" (name order).
  std::string KnobText() const;
};

// Reads the sweep and its winner. Errors: kNotFound (no such sweep, or a sweep with
// neither a verdict naming knobs nor a validated trial: the message says to look at
// `artune results --sweep ID`), kCorruption (the verdict's best_knobs is not knob
// text, or names a trial that failed or did not validate), the store's errors.
Result<SweepChoice> ReadSweepChoice(db::Store& store, int64_t sweep_id);

// The trial a sweep's verdict chose (the one whose knob key is the verdict's
// best_knobs: the final round's winner, or the default when it won); for a sweep
// without a verdict, or one naming no stored trial, the best trial
// (Store::BestTrial). nullopt when the sweep has no validated trial.
Result<std::optional<db::TrialRecord>> ChosenTrial(db::Store& store, const db::SweepRecord& sweep);
// The same choice among trials already read (the sweep report holds them all):
// the one of `trials` whose knob key is the verdict's best_knobs, else search_best
// (the store's BestTrial of the sweep).
std::optional<db::TrialRecord> ChosenAmong(const db::SweepRecord& sweep,
                                           const std::vector<db::TrialRecord>& trials,
                                           const std::optional<db::TrialRecord>& search_best);

// One line of text for a verdict value, for the human output of sweep, results and
// apply and the warning of an apply that does not beat the default (e.g. "within noise: the chosen
// config does not beat the default beyond noise
// ..."); unknown values are returned as they are.
std::string VerdictText(db::Verdict verdict);

}  // namespace artune::tuner
