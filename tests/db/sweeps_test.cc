// Sweeps and trials in and out of the store, the v2 -> v3 upgrade, and the
// one-transaction-per-trial rule that `artune sweep --resume` relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../sample_records.h"
#include "artune/db/store.h"
#include "migration_util.h"
#include "migrations.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

using samples::GridSweep;

TrialRecord SampleTrial(int64_t sweep_id, std::string eager, std::string chunk, double objective) {
  TrialRecord trial =
      samples::MeasuredTrial({{"eager_threshold", eager}, {"chunk_size", chunk}}, objective);
  trial.sweep_id = sweep_id;
  return trial;
}

class SweepStoreTest : public testing::StoreFixture {
 protected:
  int64_t NewSweep(const SweepRecord& sweep = GridSweep()) {
    auto id = store_->InsertSweep(sweep);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
};

TEST(TrialKnobKey, IsNameOrderedAndParsesBack) {
  std::map<std::string, std::string> knobs = {{"eager_threshold", "4KiB"}, {"chunk_size", "64KiB"}};
  EXPECT_EQ(TrialKnobKey(knobs), "chunk_size=64KiB;eager_threshold=4KiB");
  auto parsed = ParseTrialKnobKey("chunk_size=64KiB;eager_threshold=4KiB");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, knobs);
  for (const char* bad : {"", "chunk_size", "=4", "a=1;a=2", "b=1;a=2", "a=1=2", "a=1;"}) {
    EXPECT_FALSE(ParseTrialKnobKey(bad).ok()) << bad;
  }
}

// The words the store keeps (and JSON prints) are fixed: stores written before the
// typed states hold exactly these, and the schema's CHECKs admit no others.
TEST(StateNames, AreTheStoredWordsAndParseBack) {
  for (const auto& [status, name] :
       {std::pair{TrialStatus::kOk, "ok"}, std::pair{TrialStatus::kInvalid, "invalid"},
        std::pair{TrialStatus::kFailed, "failed"}}) {
    EXPECT_EQ(TrialStatusName(status), name);
    EXPECT_EQ(ParseTrialStatus(name), status);
  }
  for (const auto& [verdict, name] : {std::pair{Verdict::kBeatsDefault, "beats_default"},
                                      std::pair{Verdict::kWithinNoise, "within_noise"},
                                      std::pair{Verdict::kDefaultIsBest, "default_is_best"},
                                      std::pair{Verdict::kNoValidTrial, "no_valid_trial"}}) {
    EXPECT_EQ(VerdictName(verdict), name);
    EXPECT_EQ(ParseVerdict(name), verdict);
  }
  EXPECT_EQ(ParseTrialStatus("great"), std::nullopt);
  EXPECT_EQ(ParseTrialStatus("OK"), std::nullopt);
  EXPECT_EQ(ParseVerdict("better"), std::nullopt);
  EXPECT_EQ(ParseVerdict(""), std::nullopt);
}

TEST_F(SweepStoreTest, SweepRoundTripsEveryFieldAndFinishes) {
  const int64_t id = NewSweep();
  auto got = store_->GetSweep(id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const SweepRecord want = GridSweep();
  EXPECT_EQ(got->id, id);
  EXPECT_FALSE(got->created_at.empty());
  EXPECT_EQ(got->finished_at, "");
  EXPECT_EQ(got->host, want.host);
  EXPECT_EQ(got->peer, want.peer);
  EXPECT_EQ(got->fabric, want.fabric);
  EXPECT_EQ(got->objective, want.objective);
  EXPECT_EQ(got->goal, want.goal);
  EXPECT_EQ(got->strategy, want.strategy);
  EXPECT_EQ(got->workload, want.workload);
  EXPECT_EQ(got->search_space, want.search_space);
  EXPECT_EQ(got->default_knobs, want.default_knobs);
  EXPECT_EQ(got->base_config, want.base_config);
  EXPECT_EQ(got->parameters, want.parameters);

  ASSERT_TRUE(store_->FinishSweep(id).ok());
  got = store_->GetSweep(id);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->finished_at.empty());
  EXPECT_EQ(store_->FinishSweep(id + 100).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->GetSweep(id + 100).status().code(), ErrorCode::kNotFound);
}

TEST_F(SweepStoreTest, ListSweepsIsNewestFirstWithLimit) {
  SweepRecord older = GridSweep();
  older.created_at = "2024-01-01T00:00:00.000Z";
  SweepRecord newer = GridSweep();
  newer.created_at = "2024-02-01T00:00:00.000Z";
  const int64_t older_id = NewSweep(older);
  const int64_t newer_id = NewSweep(newer);
  auto all = store_->ListSweeps(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, newer_id);
  EXPECT_EQ((*all)[1].id, older_id);
  EXPECT_EQ((*all)[1].parameters, older.parameters);
  auto one = store_->ListSweeps(1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].id, newer_id);
  EXPECT_EQ(store_->ListSweeps(-1).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(SweepStoreTest, InvalidSweepsAreRefused) {
  SweepRecord no_fabric = GridSweep();
  no_fabric.fabric.clear();
  EXPECT_EQ(store_->InsertSweep(no_fabric).status().code(), ErrorCode::kInvalidArgument);
  SweepRecord bad_goal = GridSweep();
  bad_goal.goal = "lowest";
  auto refused = store_->InsertSweep(bad_goal);
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("lowest"), std::string::npos);
  SweepRecord empty_param = GridSweep();
  empty_param.parameters[""] = "x";
  EXPECT_EQ(store_->InsertSweep(empty_param).status().code(), ErrorCode::kInvalidArgument);
  auto list = store_->ListSweeps(0);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty()) << "a refused sweep left rows behind";
}

TEST_F(SweepStoreTest, TrialsRoundTripInInsertionOrder) {
  const int64_t sweep = NewSweep();
  TrialRecord first = SampleTrial(sweep, "4KiB", "64KiB", 20.0);
  TrialRecord second = SampleTrial(sweep, "8KiB", "64KiB", 10.0);
  second.status = TrialStatus::kInvalid;
  second.validated = false;
  second.error = "checksum mismatch on buffer 3";
  ASSERT_TRUE(store_->InsertTrial(first).ok());
  ASSERT_TRUE(store_->InsertTrial(second).ok());
  auto trials = store_->ListTrials(sweep);
  ASSERT_TRUE(trials.ok()) << trials.status().ToString();
  ASSERT_EQ(trials->size(), 2u);
  const TrialRecord& got = (*trials)[0];
  EXPECT_GT(got.id, 0);
  EXPECT_EQ(got.sweep_id, sweep);
  EXPECT_EQ(got.knobs, first.knobs);
  EXPECT_EQ(got.status, TrialStatus::kOk);
  EXPECT_EQ(got.objective, 20.0);
  EXPECT_EQ(got.ci_low, 18.0);
  EXPECT_EQ(got.ci_high, 22.0);
  EXPECT_EQ(got.samples, 3u);
  EXPECT_EQ(got.remeasured, 1u);
  EXPECT_TRUE(got.validated);
  EXPECT_EQ(got.duration_s, 0.25);
  EXPECT_FALSE(got.started_at.empty());
  EXPECT_EQ(got.config, first.config);
  EXPECT_EQ(got.metrics, first.metrics);
  EXPECT_EQ((*trials)[1].status, TrialStatus::kInvalid);
  EXPECT_EQ((*trials)[1].error, second.error);
  EXPECT_FALSE((*trials)[1].validated);
  EXPECT_EQ(store_->ListTrials(sweep + 9).status().code(), ErrorCode::kNotFound);
}

TEST_F(SweepStoreTest, RepeatedKnobsInOneSweepAreAlreadyExistsButFineInAnother) {
  const int64_t sweep = NewSweep();
  const int64_t other = NewSweep();
  ASSERT_TRUE(store_->InsertTrial(SampleTrial(sweep, "4KiB", "64KiB", 20.0)).ok());
  auto again = store_->InsertTrial(SampleTrial(sweep, "4KiB", "64KiB", 19.0));
  EXPECT_EQ(again.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("chunk_size=64KiB;eager_threshold=4KiB"),
            std::string::npos)
      << again.status().message();
  EXPECT_TRUE(store_->InsertTrial(SampleTrial(other, "4KiB", "64KiB", 19.0)).ok());
  auto trials = store_->ListTrials(sweep);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ((*trials)[0].objective, 20.0) << "the first measurement must be the one kept";
}

TEST_F(SweepStoreTest, InvalidTrialsAreRefusedAndLeaveNothing) {
  const int64_t sweep = NewSweep();
  TrialRecord no_sweep = SampleTrial(sweep + 50, "4KiB", "64KiB", 1.0);
  EXPECT_EQ(store_->InsertTrial(no_sweep).status().code(), ErrorCode::kNotFound);
  TrialRecord no_knobs = SampleTrial(sweep, "4KiB", "64KiB", 1.0);
  no_knobs.knobs.clear();
  EXPECT_EQ(store_->InsertTrial(no_knobs).status().code(), ErrorCode::kInvalidArgument);
  TrialRecord separator = SampleTrial(sweep, "4;KiB", "64KiB", 1.0);
  EXPECT_EQ(store_->InsertTrial(separator).status().code(), ErrorCode::kInvalidArgument);
  TrialRecord nan = SampleTrial(sweep, "4KiB", "64KiB", 1.0);
  nan.objective = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(store_->InsertTrial(nan).status().code(), ErrorCode::kInvalidArgument);
  TrialRecord inf_metric = SampleTrial(sweep, "4KiB", "64KiB", 1.0);
  inf_metric.metrics["p99_us"] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(store_->InsertTrial(inf_metric).status().code(), ErrorCode::kInvalidArgument);
  TrialRecord empty_config_name = SampleTrial(sweep, "4KiB", "64KiB", 1.0);
  empty_config_name.config[""] = "1";
  EXPECT_EQ(store_->InsertTrial(empty_config_name).status().code(), ErrorCode::kInvalidArgument);
  auto trials = store_->ListTrials(sweep);
  ASSERT_TRUE(trials.ok());
  EXPECT_TRUE(trials->empty()) << "a refused trial left rows behind";
  // The refused one with a bad config row rolled back whole: the point is still free.
  EXPECT_TRUE(store_->InsertTrial(SampleTrial(sweep, "4KiB", "64KiB", 1.0)).ok());
}

TEST_F(SweepStoreTest, BestTrialFollowsTheGoalAndSkipsInvalidAndFailed) {
  const int64_t minimize = NewSweep(GridSweep("min"));
  auto none = store_->BestTrial(minimize);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  TrialRecord corrupting = SampleTrial(minimize, "4KiB", "16KiB", 1.0);
  corrupting.status = TrialStatus::kInvalid;
  corrupting.validated = false;
  TrialRecord failed = SampleTrial(minimize, "4KiB", "32KiB", 0.0);
  failed.status = TrialStatus::kFailed;
  failed.validated = false;
  failed.metrics.clear();
  ASSERT_TRUE(store_->InsertTrial(corrupting).ok());
  ASSERT_TRUE(store_->InsertTrial(failed).ok());
  ASSERT_TRUE(store_->InsertTrial(SampleTrial(minimize, "4KiB", "64KiB", 30.0)).ok());
  ASSERT_TRUE(store_->InsertTrial(SampleTrial(minimize, "8KiB", "64KiB", 10.0)).ok());
  ASSERT_TRUE(store_->InsertTrial(SampleTrial(minimize, "16KiB", "64KiB", 10.0)).ok());
  auto best = store_->BestTrial(minimize);
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  ASSERT_TRUE(best->has_value());
  EXPECT_EQ((*best)->objective, 10.0);
  EXPECT_EQ((*best)->knobs.at("eager_threshold"), "8KiB") << "ties go to the earlier trial";
  EXPECT_EQ((*best)->metrics.at("p50_us"), 10.0);

  const int64_t maximize = NewSweep(GridSweep("max"));
  ASSERT_TRUE(store_->InsertTrial(SampleTrial(maximize, "4KiB", "64KiB", 30.0)).ok());
  ASSERT_TRUE(store_->InsertTrial(SampleTrial(maximize, "8KiB", "64KiB", 10.0)).ok());
  best = store_->BestTrial(maximize);
  ASSERT_TRUE(best.ok());
  ASSERT_TRUE(best->has_value());
  EXPECT_EQ((*best)->objective, 30.0);
  EXPECT_EQ(store_->BestTrial(maximize + 10).status().code(), ErrorCode::kNotFound);
}

TEST(SweepMigration, UpgradeFromV2KeepsRunsAndCapturesAndAddsSweeps) {
  TempDir dir;
  const UpgradedStore upgraded =
      UpgradeWithRow(dir.File("artune.db"), 2, "sweeps",
                     [](Store& v2) { return v2.InsertBenchRun(SampleRun(1, 2)); },
                     {{"bench_runs", 1}, {"sweeps", 0}, {"trials", 0}});
  const std::unique_ptr<Store>& store = upgraded.store;
  ASSERT_NE(store, nullptr);
  auto sweep = store->InsertSweep(GridSweep());
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_TRUE(store->InsertTrial(SampleTrial(*sweep, "4KiB", "64KiB", 5.0)).ok());
}

TEST(SweepStoreConcurrency, TrialsCommittedByOneStoreAreSeenByAnother) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  auto writer = Store::Open(path);
  ASSERT_TRUE(writer.ok());
  auto sweep = (*writer)->InsertSweep(GridSweep());
  ASSERT_TRUE(sweep.ok());
  auto reader = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(reader.ok());
  for (int i = 0; i < 5; ++i) {
    const std::string eager = std::to_string(1 << i) + "KiB";
    ASSERT_TRUE((*writer)->InsertTrial(SampleTrial(*sweep, eager, "64KiB", 1.0 + i)).ok());
    auto seen = (*reader)->ListTrials(*sweep);
    ASSERT_TRUE(seen.ok()) << seen.status().ToString();
    EXPECT_EQ(seen->size(), static_cast<size_t>(i + 1));
  }
}

// Schema v8: the background load a sweep was measured under reads back; sweeps
// stored before v8 read back 0 (none stated) once the file is migrated.
TEST(SweepMigration, BackgroundLoadReadsBackAndOlderSweepsReadNone) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  const int64_t old_sweep =
      InsertAtVersion(path, 7, "", [](Store& v7) { return v7.InsertSweep(GridSweep()); });
  ASSERT_NE(old_sweep, 0);
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto old_read = (*store)->GetSweep(old_sweep);
  ASSERT_TRUE(old_read.ok()) << old_read.status().ToString();
  EXPECT_EQ(old_read->background_load, 0u);

  SweepRecord loaded = GridSweep();
  loaded.background_load = 3;
  auto id = (*store)->InsertSweep(loaded);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto read = (*store)->GetSweep(*id);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->background_load, 3u);
  auto listed = (*store)->ListSweeps(0);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ(listed->front().background_load + listed->back().background_load, 3u);
}

}  // namespace
}  // namespace artune::db
