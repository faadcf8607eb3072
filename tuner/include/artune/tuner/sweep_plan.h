// One `artune sweep` run from a front end's settings to RunSweep's arguments: what
// to search, over which workload, how to measure, stored with the sweep so that
// --resume rebuilds the same run from the store. The CLI (and any later front end)
// fills a SweepPlan, calls PrepareSweep once and RunPreparedSweep once, and prints.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/sweep.h"
#include "artune/tuner/trial.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

// Calls in flight when neither the plan nor the capture says (`apply compare`
// uses the same default).
inline constexpr uint32_t kDefaultSweepInflight = 8;
// A capture's concurrency is capped here: a replay list rarely holds more messages.
inline constexpr uint32_t kMaxCapturedInflight = 64;

struct SweepPlan {
  std::vector<std::string> axes;  // --knob specs; empty: the default search space
  std::string scheme = "uniform";
  std::string classes;  // empty: the scheme's default
  uint32_t buffers = 10;
  int64_t capture_id = 0;  // a stored capture to replay instead of the scheme; 0: none
  uint32_t replay_messages = 32;
  std::string objective = "latency-p50";
  std::string peer;  // host:port of `artune serve`; "": a loopback server in this process
  std::string strategy = "grid";
  uint32_t repeats = 3;
  double warmup_s = 0.2;
  double duration_s = 0.5;
  uint32_t inflight = 0;  // 0: the capture's concurrency (p50), else kDefaultSweepInflight
  uint32_t finalists = 3;
  uint32_t final_rounds = 3;
  uint64_t seed = 1;
  // CPU hogs beside every measurement (background_load.h); stored with the sweep
  // (SweepRecord::background_load) and used again by --resume.
  uint32_t background_load = 0;
  // A resumed sweep stored before workload-time meant seconds per pass (no
  // "workload_time" parameter): it keeps measuring the old way.
  bool replay_fixed_rounds = false;
};

// The plan's workload: its capture's replay list, else its scheme's message
// (`artune predict` costs the same list a sweep measures). Errors: the capture's
// (kNotFound, kCorruption) and the scheme's (kInvalidArgument).
Result<Workload> WorkloadOf(const SweepPlan& plan, db::Store& store);

// What --resume needs to rebuild the same run, stored with the sweep.
std::map<std::string, std::string> SweepParameters(const SweepPlan& plan);

// Lays a stored sweep's settings over `plan` (settings a sweep stored before they
// existed keep the plan's). kCorruption for a missing or unreadable parameter.
Status RestoreSweepPlan(const db::SweepRecord& sweep, SweepPlan& plan);

// A stored sweep to continue: its record, its settings over `plan`, and the base
// config its trials started from (knobs this build dropped are skipped).
struct ResumedSweep {
  db::SweepRecord record;
  SweepPlan plan;
  transport::Config base;
};
Result<ResumedSweep> LoadSweepToResume(db::Store& store, int64_t sweep_id, SweepPlan plan);

// Everything RunSweep takes, built and checked.
struct PreparedSweep {
  db::SweepRecord record;  // a new sweep's fields filled in, or as stored when resumed
  transport::Config base;
  SearchSpace space;
  Objective objective = Objective::kLatencyP50;
  Workload workload;
  uint32_t inflight = 0;  // what the trials keep in flight (the plan's, once resolved)
  std::unique_ptr<TrialTarget> target;
  SweepOptions options;
};

// Called when the plan left inflight to the capture, with the inflight chosen: the
// front end may say so (the capture's method and whether it was capped are in
// `workload`).
using CapturedInflightFn = std::function<void(uint32_t inflight, const Workload& workload)>;

// Parses and checks the plan (search space, objective, strategy, final round),
// loads its workload, opens the trial target over `base`, and fills a new sweep's
// record (`resumed` false; `record` then holds nothing yet) or keeps a resumed one's.
// Errors: kInvalidArgument for a bad plan; the store's and the target's.
Result<PreparedSweep> PrepareSweep(db::Store& store, const SweepPlan& plan,
                                   const transport::Config& base, db::SweepRecord record,
                                   bool resumed, const CapturedInflightFn& captured_inflight);

// Where a sweep starts: a new one over the front end's config, or a stored one.
struct SweepStart {
  int64_t resume = 0;  // a stored sweep to continue (its plan and base config); 0: new
  // A new sweep's base config (the front end's knobs); not called when resuming.
  std::function<Result<transport::Config>()> load_config;
  std::string fabric;  // a new sweep's fabric over the config's; "" keeps the config's
  // The plan's background load was asked for: a resumed sweep stored under another
  // load is then refused (its trials must compare).
  bool background_load_given = false;
};

// PrepareSweep from `start`: a new sweep over load_config's config (with `fabric`),
// or the stored sweep's record, its settings over `plan` (LoadSweepToResume) and
// its base config. Errors: load_config's, an unknown fabric (kInvalidArgument),
// LoadSweepToResume's, kInvalidArgument for a background load other than the
// resumed sweep's, and PrepareSweep's.
Result<PreparedSweep> PrepareSweepFrom(db::Store& store, SweepPlan plan, const SweepStart& start,
                                       const CapturedInflightFn& captured_inflight);

// RunSweep over a prepared sweep, with the record's background load
// (BackgroundLoad: its hogs run from before the first measurement until the sweep
// returns, error or not). kIoError when the hogs cannot be started.
Result<SweepOutcome> RunPreparedSweep(db::Store& store, PreparedSweep& prepared,
                                      const SweepProgressFn& progress);

}  // namespace artune::tuner
