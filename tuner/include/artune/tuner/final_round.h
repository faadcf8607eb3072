// The final round of a sweep: the winner is chosen on fresh, interleaved
// measurements, not on the luckiest trial of the search.
//
// Why: a sweep measures each point once, in sequence, on a machine whose speed
// drifts (load, caches, a software RDMA device's scheduler ticks). The best of many
// noisy trials is the one whose noise happened to flatter it most (the winner's
// curse), and the default was measured at the start, under other conditions. In the
// lab the search's best re-measured 26-50 % slower than its winning value
// (bench/sweep.md) and a winner judged that way lost to the default in the
// side-by-side compare (bench/loop.md, run 1).
//
// How: the few best configs of the search (the finalists, never the default) and
// the default are measured again in `rounds` rounds; within a round each config is
// measured once, in an order that alternates (forward on even rounds, backward on
// odd ones) so that no config always runs first or right after another. Each
// config's measurements are pooled (PoolRounds), and in every round each finalist
// is compared with the default of that same round (rounds_won), sample by sample
// (paired_speedups). The sweep's verdict (sweep.h: DecideVerdict) is then taken on
// these numbers alone.
//
// Threading: runs on the calling thread, like the sweep.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/goal.h"
#include "artune/tuner/trial.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

// A trial that counts: status "ok" and every payload validated.
bool OkAndValidated(const db::TrialRecord& trial);

struct FinalRoundOptions {
  uint32_t finalists = 3;  // configs besides the default (>= 1)
  uint32_t rounds = 3;     // interleaved rounds (>= 1)
};
// kInvalidArgument naming the field for zero finalists or rounds, or more than 16
// of either (a final round costs (finalists + 1) x rounds trials).
Status ValidateFinalRoundOptions(const FinalRoundOptions& options);

// Up to `count` trials that are "ok" and validated, best first by `goal`
// (ties: the order given), one per knob key, never the one whose key is
// `default_knobs`.
std::vector<db::TrialRecord> PickFinalists(const std::vector<db::TrialRecord>& trials,
                                           const std::string& default_knobs, ObjectiveGoal goal,
                                           uint32_t count);

// One config's rounds pooled into one record (sweep_id and knobs from the
// arguments, id 0): when every round carries its samples (TrialMeasurement::values)
// the objective is their median with MedianWithConfidence's interval over all of
// them; else (targets that report no samples) the medians of the rounds'
// objectives, ci_lows and ci_highs. The first round that is not "ok" and validated
// makes the record that status, with its error. samples sums the rounds', remeasured
// is rounds - 1, duration_s sums the rounds', metrics are medians over the rounds.
// `rounds` must not be empty.
db::TrialRecord PoolRounds(int64_t sweep_id, const std::map<std::string, std::string>& knobs,
                           const std::vector<TrialMeasurement>& rounds);

struct FinalRoundResult {
  uint32_t rounds = 0;
  db::TrialRecord default_pooled;  // knobs: the default's
  // Every finalist, those "ok" and validated first (the first is the winner),
  // best first by the median of their paired_speedups when every one of them has
  // kMinPairsForVerdict pairs, else by pooled objective; then the rest in the order
  // given.
  std::vector<db::FinalistRecord> finalists;
  // By finalist knob key: its speedups over the default (>1: the finalist is
  // better, in the objective's direction), pairing the k-th sample of each round
  // with the default's k-th sample of that round; rounds either failed in, or
  // targets that report no samples, give no pairs. Samples of one round are close
  // in time, so the machine's drift over the sweep cancels in a pair.
  std::map<std::string, std::vector<double>> paired_speedups;
};

// Called before each measurement of the final round: the measurement's number from
// 1, their total, and the knob key of the config about to be measured.
using FinalRoundProgressFn =
    std::function<void(size_t measurement, size_t total, const std::string& knobs)>;

// Measures the default (`base`, its swept knob values `default_knobs`) and each of
// `finalists` (each applied to `base` through its knobs) in options.rounds
// interleaved rounds over `target`. A finalist that fails or corrupts in a round is
// not measured again (it cannot win) and loses the rounds it missed. Errors: the
// options' (ValidateFinalRoundOptions), an empty `finalists` list
// (kInvalidArgument), a finalist knob `base` refuses, and the target's (a target
// that is no longer usable).
Result<FinalRoundResult> RunFinalRound(TrialTarget& target, const Workload& workload,
                                       const transport::Config& base, int64_t sweep_id,
                                       const std::map<std::string, std::string>& default_knobs,
                                       const std::vector<db::TrialRecord>& finalists,
                                       ObjectiveGoal goal, const FinalRoundOptions& options,
                                       const FinalRoundProgressFn& progress = {});

}  // namespace artune::tuner
