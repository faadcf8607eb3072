// Shared by the tests that store sweeps and trials (tests/db, tests/dashboard,
// tests/cluster): one sweep and one measured trial with every field a store needs,
// so that a test writes only the fields it is about.
#pragma once

#include <map>
#include <string>

#include "artune/db/store.h"

namespace artune::samples {

// A grid over two eager thresholds and two chunk sizes on loopback tcp; goal "min"
// minimises p50 latency, "max" maximises bandwidth.
inline db::SweepRecord GridSweep(const std::string& goal = "min") {
  db::SweepRecord sweep;
  sweep.host = "host-a";
  sweep.peer = "loopback";
  sweep.fabric = "tcp";
  sweep.objective = goal == "min" ? "latency-p50" : "bandwidth";
  sweep.goal = goal;
  sweep.strategy = "grid";
  sweep.workload = "scheme:uniform";
  sweep.search_space = "eager_threshold=4KiB,16KiB chunk_size=128KiB,512KiB";
  sweep.default_knobs = "chunk_size=512KiB;eager_threshold=16KiB";
  sweep.base_config = {{"eager_threshold", "16KiB"}, {"chunk_size", "512KiB"}};
  sweep.parameters = {{"repeats", "3"}, {"seed", "7"}};
  return sweep;
}

// A validated trial of `knobs` (on tcp) that measured `objective` within ±10 %, once
// measured again.
inline db::TrialRecord MeasuredTrial(const std::map<std::string, std::string>& knobs,
                                     double objective) {
  db::TrialRecord trial;
  trial.knobs = knobs;
  trial.config = knobs;
  trial.config["fabric"] = "tcp";
  trial.status = db::TrialStatus::kOk;
  trial.validated = true;
  trial.objective = objective;
  trial.ci_low = objective * 0.9;
  trial.ci_high = objective * 1.1;
  trial.samples = 3;
  trial.remeasured = 1;
  trial.duration_s = 0.25;
  trial.metrics = {{"p50_us", objective}, {"p99_us", objective * 2}};
  return trial;
}

}  // namespace artune::samples
