// A small sweep over a loopback server, stored; resuming measures only what is new.
#include "artune/tuner/sweep.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include "temp_db.h"

namespace artune::tuner {
namespace {

TrialOptions QuickOptions(Objective objective) {
  TrialOptions options;
  options.objective = objective;
  options.repeats = 2;
  options.warmup_s = 0.02;
  options.duration_s = 0.05;
  options.max_remeasure = 0;
  return options;
}

db::SweepRecord NewSweepRecord(std::string strategy, Objective objective) {
  db::SweepRecord sweep;
  sweep.host = "test";
  sweep.peer = "loopback";
  sweep.fabric = "tcp";
  sweep.objective = std::string(ObjectiveName(objective));
  sweep.strategy = std::move(strategy);
  sweep.workload = "scheme:uniform";
  return sweep;
}

transport::Config TcpConfig() {
  transport::Config config;
  config.fabric = transport::FabricKind::kTcp;
  return config;
}

Workload SmallWorkload() {
  PayloadSpec spec;
  spec.scheme = Scheme::kUniform;
  spec.classes = {BufferClass::kSmall, BufferClass::kMedium};
  spec.buffer_count = 4;
  auto workload = SchemeWorkload(spec);
  EXPECT_TRUE(workload.ok()) << workload.status().ToString();
  return std::move(workload).value();
}

TEST(Sweep, GridOnLoopbackStoresEveryTrialValidatedAndResumeMeasuresNothing) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<std::string> specs = {"eager_threshold=1KiB,64KiB", "chunk_size=64KiB,1MiB"};
  auto space = ParseSearchSpace(specs);
  ASSERT_TRUE(space.ok());
  const TrialOptions options = QuickOptions(Objective::kLatencyP50);
  auto target = TrialTarget::Open(TcpConfig(), "", options);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  EXPECT_EQ((*target)->fabric(), "tcp");
  const Workload workload = SmallWorkload();

  std::vector<SweepProgress> reports;
  auto outcome = RunSweep(**store, **target, workload, *space, TcpConfig(),
                          NewSweepRecord("grid", Objective::kLatencyP50),
                          [&](const SweepProgress& p) { reports.push_back(p); });
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  // The default (16KiB, 512KiB) is off this grid: 4 grid points + the default.
  EXPECT_EQ(outcome->trials.size(), 5u);
  EXPECT_EQ(outcome->measured, 5u);
  EXPECT_EQ(outcome->resumed, 0u);
  for (const db::TrialRecord& trial : outcome->trials) {
    EXPECT_EQ(trial.status, db::TrialStatus::kOk) << trial.error;
    EXPECT_TRUE(trial.validated);
    EXPECT_GT(trial.objective, 0);
    EXPECT_LE(trial.ci_low, trial.objective);
    EXPECT_GE(trial.ci_high, trial.objective);
    EXPECT_EQ(trial.samples, 2u);
    // The agreed config carries the trial's knob values.
    EXPECT_EQ(trial.config.at("eager_threshold"), trial.knobs.at("eager_threshold"));
  }
  ASSERT_TRUE(outcome->best.has_value());
  ASSERT_TRUE(outcome->default_trial.has_value());
  EXPECT_EQ(outcome->default_trial->knobs.at("eager_threshold"), "16KiB");
  EXPECT_FALSE(outcome->sweep.finished_at.empty());
  EXPECT_EQ(outcome->sweep.goal, "min");
  // 5 search trials, then the final round: the default and 3 finalists, 3 rounds.
  ASSERT_EQ(reports.size(), 5u + 12u);
  EXPECT_EQ(reports[4].trial, 5u);
  EXPECT_FALSE(reports[4].final_round);
  EXPECT_TRUE(reports[4].best_objective.has_value());
  for (size_t i = 5; i < reports.size(); ++i) {
    EXPECT_TRUE(reports[i].final_round);
    EXPECT_EQ(reports[i].trial, i + 1);
    EXPECT_EQ(reports[i].estimated, 17u);
  }
  ASSERT_TRUE(outcome->sweep.verdict.has_value());
  EXPECT_EQ(outcome->sweep.verdict->final_rounds, 3u);
  EXPECT_EQ(outcome->sweep.verdict->finalists.size(), 3u);

  // Resume the finished sweep: every point comes from the store.
  auto again = RunSweep(**store, **target, workload, *space, TcpConfig(), outcome->sweep, {});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->measured, 0u);
  EXPECT_EQ(again->resumed, 5u);
  EXPECT_EQ(again->trials.size(), 5u);
}

TEST(Sweep, ResumeMeasuresOnlyTheMissingPoints) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  std::vector<std::string> specs = {"eager_threshold=4KiB,16KiB", "chunk_size=128KiB,512KiB"};
  auto space = ParseSearchSpace(specs);
  ASSERT_TRUE(space.ok());
  const TrialOptions options = QuickOptions(Objective::kBandwidth);
  auto target = TrialTarget::Open(TcpConfig(), "", options);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  const Workload workload = SmallWorkload();

  // A sweep "killed" after two trials: the record and two trials are stored.
  db::SweepRecord sweep = NewSweepRecord("grid", Objective::kBandwidth);
  sweep.goal = "max";
  sweep.search_space = space->Canonical();
  sweep.default_knobs = "chunk_size=512KiB;eager_threshold=16KiB";
  auto id = (*store)->InsertSweep(sweep);
  ASSERT_TRUE(id.ok());
  for (const auto& [eager, chunk] : {std::pair{"16KiB", "512KiB"}, std::pair{"4KiB", "128KiB"}}) {
    db::TrialRecord trial;
    trial.sweep_id = *id;
    trial.knobs = {{"eager_threshold", eager}, {"chunk_size", chunk}};
    trial.status = db::TrialStatus::kOk;
    trial.objective = 123.0;
    trial.ci_low = trial.ci_high = 123.0;
    trial.validated = true;
    ASSERT_TRUE((*store)->InsertTrial(trial).ok());
  }
  auto stored = (*store)->GetSweep(*id);
  ASSERT_TRUE(stored.ok());
  auto outcome = RunSweep(**store, **target, workload, *space, TcpConfig(), *stored, {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->resumed, 2u);
  EXPECT_EQ(outcome->measured, 2u);  // 4 grid points, the default among them, 2 stored
  EXPECT_EQ(outcome->trials.size(), 4u);
  EXPECT_EQ(outcome->trials[0].objective, 123.0) << "a stored trial was measured again";
  EXPECT_EQ(outcome->trials[1].objective, 123.0) << "a stored trial was measured again";
}

TEST(Sweep, AConfigTheServerRefusesIsAFailedTrialNotAWinner) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  // eager_buffer_count x eager buffer bytes past the 1 GiB pool limit is refused by
  // ValidateConfig on both ends.
  std::vector<std::string> specs = {"eager_buffer_count=64,4096", "eager_threshold=1MiB"};
  auto space = ParseSearchSpace(specs);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  const TrialOptions options = QuickOptions(Objective::kLatencyP50);
  auto target = TrialTarget::Open(TcpConfig(), "", options);
  ASSERT_TRUE(target.ok());
  auto outcome = RunSweep(**store, **target, SmallWorkload(), *space, TcpConfig(),
                          NewSweepRecord("grid", Objective::kLatencyP50), {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  bool saw_failed = false;
  for (const db::TrialRecord& trial : outcome->trials) {
    if (trial.knobs.at("eager_buffer_count") == "4096") {
      EXPECT_EQ(trial.status, db::TrialStatus::kFailed);
      EXPECT_FALSE(trial.validated);
      EXPECT_NE(trial.error.find("reconfigure"), std::string::npos) << trial.error;
      saw_failed = true;
    }
  }
  EXPECT_TRUE(saw_failed);
  ASSERT_TRUE(outcome->best.has_value());
  EXPECT_NE(outcome->best->knobs.at("eager_buffer_count"), "4096");
}

}  // namespace
}  // namespace artune::tuner
