// A store path in a fresh temporary directory, removed with everything in it when
// the TempDb goes; for the sweep tests, which each open their own store. And the
// sweep record those tests run over a synthetic target.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "artune/db/store.h"
#include "artune/tuner/trial.h"

namespace artune::tuner {

class TempDb {
 public:
  TempDb() {
    std::string pattern = "/tmp/artune-sweep-test-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp";
    dir_ = pattern;
  }
  ~TempDb() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TempDb(const TempDb&) = delete;
  TempDb& operator=(const TempDb&) = delete;
  std::string path() const { return dir_ + "/artune.db"; }

 private:
  std::string dir_;
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
