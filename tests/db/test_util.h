// Shared by the store's tests: a temporary directory and a sample bench run.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "../temp_dir.h"
#include "artune/db/store.h"

namespace artune::db::testing {

using test_support::TempDir;

// A fixture with a fresh store in its own directory, opened before each test.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = Store::Open(dir_.File("artune.db"));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

// A run with every field set to something distinctive; `sequence` goes into the
// parameters and the numbers so runs can be told apart; `knobs` config entries.
inline BenchRun SampleRun(int sequence, int knobs = 5) {
  BenchRun run;
  run.host = "host-a";
  run.peer = "loopback";
  run.transport = sequence % 2 == 0 ? "artune" : "grpc";
  run.benchmark = "latency";
  run.scheme = "skew";
  run.fabric = sequence % 2 == 0 ? "tcp" : "";
  for (int i = 0; i < knobs; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "knob_%03d", i);
    run.config[name] = std::to_string(sequence * 1000 + i);
  }
  run.parameters["sequence"] = std::to_string(sequence);
  run.parameters["buffers"] = "10";
  run.payload_bytes = 1048576ull * 10 + static_cast<uint64_t>(sequence);
  run.duration_s = 2.5;
  run.rpcs = 1000 + static_cast<uint64_t>(sequence);
  run.latency = {12.5, 40.25, 14.0, 3.5};
  run.bandwidth_mbps = 950.5;
  run.rpcs_per_s = 400.0 + sequence;
  run.validated = true;
  return run;
}

}  // namespace artune::db::testing
