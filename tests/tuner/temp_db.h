// A store path in a fresh temporary directory, removed with everything in it when
// the TempDb goes; for the sweep tests, which each open their own store. And the
// sweep record those tests run over a synthetic target.
#pragma once

#include <string>

#include "../temp_dir.h"
#include "artune/db/store.h"
#include "artune/tuner/trial.h"

namespace artune::tuner {

class TempDb {
 public:
  std::string path() const { return dir_.File("artune.db"); }

 private:
  test_support::TempDir dir_{"artune-sweep-test"};
};

// A grid sweep of latency-p50 over scheme:uniform, to a synthetic tcp target.
inline db::SweepRecord SyntheticSweepRecord() {
  db::SweepRecord sweep;
  sweep.host = "test";
  sweep.peer = "synthetic";
  sweep.fabric = "tcp";
  sweep.objective = std::string(ObjectiveName(Objective::kLatencyP50));
  sweep.strategy = "grid";
  sweep.workload = "scheme:uniform";
  return sweep;
}

}  // namespace artune::tuner
