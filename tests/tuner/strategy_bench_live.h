// The live half of tuner_strategy_bench (sweep_strategy_bench.cc): grid and
// adaptive search over a real link, then a fair judgement of the two picks.
//
// Why a head-to-head: the grid measures 99 points once each on a noisy machine,
// so "the grid's best" is the maximum of 99 noisy numbers — optimistically
// biased (winner's curse) — and the adaptive search runs minutes later, under a
// different load. Comparing the adaptive pick's value with the grid's best value
// therefore mixes strategy quality with noise and drift. RunLive instead
// re-measures the two picks interleaved, grid pick then adaptive pick, N rounds,
// each a normal trial measurement (TrialTarget::Measure: reconfigure both ends,
// warm-up, repeats, median), so both picks see the same load at nearly the same
// time, and neither is selected on the numbers it is judged on. It reports:
//   * each pick's median over the rounds with its order-statistic CI (stats.h);
//   * the gap from those medians: how much worse the adaptive pick is, in % of
//     the grid pick (positive: adaptive worse; negative: adaptive better);
//   * the paired gap: the per-round gap (same round, same load) summarised by its
//     median and CI, which cancels load drift between rounds;
//   * beside them, the old reading: the gap on the grid's own numbers.
// When both picks are the same point the gap is 0 by construction; the rounds are
// still measured and show the noise level of the link.
//
// Threading: everything runs on the calling thread (the TrialTarget's rule).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/trial.h"
#include "artune/tuner/workload.h"

namespace artune::tuner::bench {

struct LiveOptions {
  transport::Config base;  // fabric and --set knobs; the swept knobs come from `space`
  std::string peer;        // "host:port" of `artune serve`; empty: loopback in-process
  TrialOptions trial;      // objective, repeats, duration, warm-up
  SearchSpace space;
  Workload workload;
  uint32_t rounds = 10;  // head-to-head rounds (each measures both picks once)
};

struct PickReport {
  std::string strategy;  // "grid" | "adaptive (on the grid's numbers)" | "adaptive (live)"
  size_t trials = 0;     // evaluations the strategy asked for
  double share = 0;      // trials / grid trials
  bool found = false;    // false: no valid trial
  Point point;
  std::string knobs;  // db::TrialKnobKey text
  // The pick's value as its own search measured it (objective units) and its CI.
  double value = 0, ci_low = 0, ci_high = 0;
  // The grid's measurement of the same point, and the gap from the grid's best on
  // those numbers (%, positive: worse); nullopt when the grid could not measure it.
  std::optional<double> grid_value;
  std::optional<double> gap_on_grid_pct;
  double seconds = 0;
};

struct HeadToHead {
  uint32_t rounds = 0;     // asked for
  uint32_t rounds_ok = 0;  // rounds where both measurements were ok
  bool same_point = false;
  MedianEstimate grid, adaptive;  // objective units, over the ok rounds
  double gap_pct = 0;             // from the two medians (positive: adaptive worse)
  MedianEstimate paired_gap_pct;  // per-round gaps
  std::vector<double> grid_values, adaptive_values;
  double seconds = 0;
};

struct LiveReport {
  std::string fabric, peer, objective, unit, workload, space;
  size_t grid_points = 0;
  WarmupReport warmup;
  PickReport grid, replay, live;
  std::optional<HeadToHead> head_to_head;  // absent when a search found no valid point
  double seconds = 0;
};

// Opens the target, warms the path under `base`, runs the grid, replays the
// adaptive search on the grid's numbers, runs the adaptive search live, then the
// head-to-head. One progress line per measurement goes to `progress`. Errors: the
// target cannot be opened or becomes unusable (failed trials are not errors).
Result<LiveReport> RunLive(const LiveOptions& options, std::FILE* progress);

void PrintLiveReport(const LiveReport& report, std::FILE* out);
nlohmann::ordered_json LiveReportJson(const LiveReport& report);

}  // namespace artune::tuner::bench
