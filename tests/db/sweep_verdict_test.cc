// A sweep's verdict, its re-measured default and best (schemas v4, v5) and its final
// round's finalists (v6): round trip through GetSweep and ListSweeps, replacement on
// a second record, refusal of bad input, and upgrades of files that already hold
// sweeps.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../sample_records.h"
#include "artune/db/store.h"
#include "migration_util.h"
#include "migrations.h"
#include "sqlite.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

TrialRecord Remeasured(double objective) {
  TrialRecord again =
      samples::MeasuredTrial({{"eager_threshold", "16KiB"}, {"chunk_size", "512KiB"}}, objective);
  again.started_at = "2026-01-02T03:04:05.678Z";
  return again;
}

SweepVerdict WithinNoise(double default_objective) {
  SweepVerdict verdict;
  verdict.verdict = Verdict::kWithinNoise;
  verdict.best_knobs = "chunk_size=128KiB;eager_threshold=4KiB";
  verdict.decided_at = "2026-01-02T03:04:07.000Z";
  verdict.default_remeasured = Remeasured(default_objective);
  return verdict;
}

class SweepVerdictTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    if (HasFatalFailure()) return;
    auto id = store_->InsertSweep(samples::GridSweep());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    sweep_id_ = *id;
  }

  int64_t CountRows(const std::string& table) {
    auto raw = sqlite::Database::Open(dir_.File("artune.db"), SQLITE_OPEN_READONLY);
    EXPECT_TRUE(raw.ok());
    auto count = raw->QueryInt64("SELECT count(*) FROM " + table);
    EXPECT_TRUE(count.ok()) << count.status().ToString();
    return count.ok() ? *count : -1;
  }

  int64_t sweep_id_ = 0;
};

void ExpectSameMeasurement(const TrialRecord& got, const TrialRecord& want) {
  EXPECT_EQ(got.id, 0);
  EXPECT_EQ(got.knobs, want.knobs);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.objective, want.objective);
  EXPECT_EQ(got.ci_low, want.ci_low);
  EXPECT_EQ(got.ci_high, want.ci_high);
  EXPECT_EQ(got.samples, want.samples);
  EXPECT_EQ(got.remeasured, want.remeasured);
  EXPECT_EQ(got.validated, want.validated);
  EXPECT_EQ(got.error, want.error);
  EXPECT_EQ(got.started_at, want.started_at);
  EXPECT_EQ(got.duration_s, want.duration_s);
  EXPECT_EQ(got.metrics, want.metrics);
  EXPECT_TRUE(got.config.empty()) << "the re-measurement's config is the sweep's base config";
}

TEST_F(SweepVerdictTest, ASweepHasNoVerdictUntilOneIsRecorded) {
  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_FALSE(sweep->verdict.has_value());
}

TEST_F(SweepVerdictTest, RoundTripsThroughGetSweepAndListSweeps) {
  const SweepVerdict want = WithinNoise(100);
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, want).ok());

  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->verdict, Verdict::kWithinNoise);
  EXPECT_FALSE(sweep->verdict->best_beats_default());
  EXPECT_EQ(sweep->verdict->best_knobs, want.best_knobs);
  EXPECT_EQ(sweep->verdict->decided_at, want.decided_at);
  ASSERT_TRUE(sweep->verdict->default_remeasured.has_value());
  ExpectSameMeasurement(*sweep->verdict->default_remeasured, *want.default_remeasured);
  EXPECT_EQ(sweep->verdict->default_remeasured->sweep_id, sweep_id_);

  auto listed = store_->ListSweeps(0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  ASSERT_TRUE((*listed)[0].verdict.has_value());
  EXPECT_EQ((*listed)[0].verdict->verdict, Verdict::kWithinNoise);
  ASSERT_TRUE((*listed)[0].verdict->default_remeasured.has_value());
  ExpectSameMeasurement(*(*listed)[0].verdict->default_remeasured, *want.default_remeasured);
}

TEST_F(SweepVerdictTest, TheBestReMeasuredRoundTripsBesideTheDefault) {
  SweepVerdict want = WithinNoise(100);
  want.best_remeasured = Remeasured(97);
  want.best_remeasured->knobs = {{"chunk_size", "128KiB"}, {"eager_threshold", "4KiB"}};
  want.best_remeasured->metrics = {{"p50_us", 97}};
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, want).ok());
  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_TRUE(sweep->verdict.has_value());
  ASSERT_TRUE(sweep->verdict->best_remeasured.has_value());
  ExpectSameMeasurement(*sweep->verdict->best_remeasured, *want.best_remeasured);
  ASSERT_TRUE(sweep->verdict->default_remeasured.has_value());
  ExpectSameMeasurement(*sweep->verdict->default_remeasured, *want.default_remeasured);

  // Replacing the verdict without one removes it; a bad one is refused by name.
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, WithinNoise(100)).ok());
  EXPECT_EQ(CountRows("sweep_best_remeasured"), 0);
  EXPECT_EQ(CountRows("sweep_best_remeasured_metrics"), 0);
  want.best_remeasured->ci_high = std::numeric_limits<double>::infinity();
  const Status refused = store_->RecordSweepVerdict(sweep_id_, want);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("re-measured best"), std::string::npos) << refused.ToString();
}

TEST_F(SweepVerdictTest, TheFinalRoundsFinalistsRoundTripInRankOrder) {
  SweepVerdict want = WithinNoise(100);
  want.final_rounds = 3;
  FinalistRecord winner{Remeasured(90), 3};
  winner.pooled.knobs = {{"chunk_size", "1MiB"}, {"eager_threshold", "16KiB"}};
  FinalistRecord second{Remeasured(95), 2};
  second.pooled.knobs = {{"chunk_size", "128KiB"}, {"eager_threshold", "4KiB"}};
  second.pooled.metrics = {};
  FinalistRecord broken{Remeasured(0), 0};
  broken.pooled.knobs = {{"chunk_size", "16KiB"}, {"eager_threshold", "4KiB"}};
  broken.pooled.status = TrialStatus::kInvalid;
  broken.pooled.validated = false;
  broken.pooled.error = "checksum mismatch";
  want.finalists = {winner, second, broken};
  want.best_knobs = TrialKnobKey(winner.pooled.knobs);
  want.best_remeasured = winner.pooled;
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, want).ok());

  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->final_rounds, 3u);
  ASSERT_EQ(sweep->verdict->finalists.size(), 3u);
  for (size_t i = 0; i < want.finalists.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameMeasurement(sweep->verdict->finalists[i].pooled, want.finalists[i].pooled);
    EXPECT_EQ(sweep->verdict->finalists[i].rounds_won, want.finalists[i].rounds_won);
  }
  auto listed = store_->ListSweeps(0);
  ASSERT_TRUE(listed.ok());
  ASSERT_TRUE((*listed)[0].verdict.has_value());
  EXPECT_EQ((*listed)[0].verdict->finalists.size(), 3u);

  // A verdict without a final round replaces them all (the cascade).
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, WithinNoise(100)).ok());
  EXPECT_EQ(CountRows("sweep_finalists"), 0);
  EXPECT_EQ(CountRows("sweep_finalist_metrics"), 0);
  sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->verdict->final_rounds, 0u);
  EXPECT_TRUE(sweep->verdict->finalists.empty());
}

TEST_F(SweepVerdictTest, RefusesFinalistsThatCannotBe) {
  SweepVerdict verdict = WithinNoise(100);
  FinalistRecord finalist{Remeasured(90), 2};
  finalist.pooled.knobs = {{"chunk_size", "1MiB"}};
  verdict.finalists = {finalist};
  // Finalists without rounds.
  EXPECT_EQ(store_->RecordSweepVerdict(sweep_id_, verdict).code(), ErrorCode::kInvalidArgument);
  // More rounds won than run.
  verdict.final_rounds = 1;
  const Status too_many = store_->RecordSweepVerdict(sweep_id_, verdict);
  EXPECT_EQ(too_many.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(too_many.message().find("won 2 of 1"), std::string::npos) << too_many.ToString();
  // The same config twice.
  verdict.final_rounds = 3;
  verdict.finalists = {finalist, finalist};
  const Status twice = store_->RecordSweepVerdict(sweep_id_, verdict);
  EXPECT_EQ(twice.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("twice"), std::string::npos) << twice.ToString();
  EXPECT_EQ(CountRows("sweep_verdicts"), 0) << "a refused verdict left rows";
}

TEST_F(SweepVerdictTest, EmptyTimesBecomeNow) {
  SweepVerdict verdict = WithinNoise(100);
  verdict.decided_at.clear();
  verdict.default_remeasured->started_at.clear();
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, verdict).ok());
  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->decided_at.size(), 24u) << sweep->verdict->decided_at;
  EXPECT_EQ(sweep->verdict->default_remeasured->started_at.size(), 24u);
}

TEST_F(SweepVerdictTest, RecordingAgainReplacesTheVerdictAndTheMeasurement) {
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, WithinNoise(100)).ok());
  SweepVerdict second;
  second.verdict = Verdict::kBeatsDefault;
  second.best_knobs = "chunk_size=128KiB;eager_threshold=4KiB";
  second.default_remeasured = Remeasured(150);
  second.default_remeasured->metrics = {{"p50_us", 150}};
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, second).ok());

  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->verdict, Verdict::kBeatsDefault);
  EXPECT_TRUE(sweep->verdict->best_beats_default());
  ASSERT_TRUE(sweep->verdict->default_remeasured.has_value());
  EXPECT_EQ(sweep->verdict->default_remeasured->objective, 150);
  EXPECT_EQ(sweep->verdict->default_remeasured->metrics,
            (std::map<std::string, double>{{"p50_us", 150}}));
  EXPECT_EQ(CountRows("sweep_verdicts"), 1);
  EXPECT_EQ(CountRows("sweep_default_remeasured"), 1);
  EXPECT_EQ(CountRows("sweep_default_remeasured_metrics"), 1);

  // A verdict without a re-measurement drops the old one.
  SweepVerdict bare;
  bare.verdict = Verdict::kNoValidTrial;
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, bare).ok());
  sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->verdict, Verdict::kNoValidTrial);
  EXPECT_EQ(sweep->verdict->best_knobs, "");
  EXPECT_FALSE(sweep->verdict->default_remeasured.has_value());
  EXPECT_EQ(CountRows("sweep_default_remeasured"), 0);
  EXPECT_EQ(CountRows("sweep_default_remeasured_metrics"), 0);
}

TEST_F(SweepVerdictTest, BadInputIsRefusedAndKeepsTheStoredVerdict) {
  ASSERT_TRUE(store_->RecordSweepVerdict(sweep_id_, WithinNoise(100)).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::string, SweepVerdict>> bad;
  {
    SweepVerdict v = WithinNoise(1);
    v.best_knobs.clear();
    bad.emplace_back("within_noise without best_knobs", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.verdict = Verdict::kNoValidTrial;
    bad.emplace_back("no_valid_trial with best_knobs", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.best_knobs = "eager_threshold";
    bad.emplace_back("best_knobs not a knob key", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.default_remeasured->objective = nan;
    bad.emplace_back("NaN objective", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.default_remeasured->ci_high = inf;
    bad.emplace_back("infinite ci_high", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.default_remeasured->duration_s = -inf;
    bad.emplace_back("infinite duration", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.default_remeasured->metrics["p99_us"] = nan;
    bad.emplace_back("NaN metric", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.default_remeasured->knobs.clear();
    bad.emplace_back("no knobs", v);
  }
  {
    SweepVerdict v = WithinNoise(1);
    v.default_remeasured->samples = uint64_t{1} << 63;
    bad.emplace_back("samples past INT64_MAX", v);
  }
  for (const auto& [what, verdict] : bad) {
    Status status = store_->RecordSweepVerdict(sweep_id_, verdict);
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << what << ": " << status.ToString();
  }
  auto sweep = store_->GetSweep(sweep_id_);
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->default_remeasured->objective, 100) << "a refused record changed it";

  EXPECT_EQ(store_->RecordSweepVerdict(sweep_id_ + 100, WithinNoise(1)).code(),
            ErrorCode::kNotFound);
}

TEST(SweepVerdictMigration, AV3FileWithSweepsMigratesAndKeepsThem) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  int64_t sweep_id = 0;
  {
    std::unique_ptr<Store> v3 = OpenAtVersion(path, 3);
    ASSERT_NE(v3, nullptr);
    auto id = v3->InsertSweep(samples::GridSweep());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    sweep_id = *id;
    TrialRecord trial = Remeasured(100);
    trial.sweep_id = sweep_id;
    ASSERT_TRUE(v3->InsertTrial(trial).ok());
    ASSERT_TRUE(v3->FinishSweep(sweep_id).ok());
    auto info = v3->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->schema_version, 3);
    EXPECT_EQ(info->row_counts.count("sweep_verdicts"), 0u);
  }
  std::unique_ptr<Store> store;
  const StoreInfo info = OpenMigrated(path, store);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(info.row_counts.at("sweep_best_remeasured"), 0);
  EXPECT_EQ(info.row_counts.at("sweep_finalists"), 0);
  EXPECT_EQ(info.row_counts.at("sweeps"), 1);
  EXPECT_EQ(info.row_counts.at("trials"), 1);
  EXPECT_EQ(info.row_counts.at("sweep_verdicts"), 0);

  auto sweep = store->GetSweep(sweep_id);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->search_space, samples::GridSweep().search_space);
  EXPECT_EQ(sweep->base_config, samples::GridSweep().base_config);
  EXPECT_FALSE(sweep->finished_at.empty());
  EXPECT_FALSE(sweep->verdict.has_value()) << "a sweep from before v4 has no verdict";
  auto trials = store->ListTrials(sweep_id);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ((*trials)[0].metrics, Remeasured(100).metrics);

  ASSERT_TRUE(store->RecordSweepVerdict(sweep_id, WithinNoise(99)).ok());
  sweep = store->GetSweep(sweep_id);
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->default_remeasured->objective, 99);
}

TEST(SweepVerdictMigration, DeletingASweepDeletesItsVerdict) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok());
  auto id = (*store)->InsertSweep(samples::GridSweep());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*store)->RecordSweepVerdict(*id, WithinNoise(100)).ok());
  auto raw = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw->Exec("PRAGMA foreign_keys = ON").ok());
  ASSERT_TRUE(raw->Exec("DELETE FROM sweeps WHERE id = " + std::to_string(*id)).ok());
  for (const char* table :
       {"sweep_verdicts", "sweep_default_remeasured", "sweep_default_remeasured_metrics"}) {
    auto count = raw->QueryInt64(std::string("SELECT count(*) FROM ") + table);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, 0) << table;
  }
}

TEST(SweepVerdictMigration, AV5VerdictReadsBackWithoutAFinalRound) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  const int64_t sweep_id =
      InsertAtVersion(path, 5, "", [](Store& v5) { return v5.InsertSweep(samples::GridSweep()); });
  ASSERT_NE(sweep_id, 0);
  {
    // This build writes v6 rows; a v5 build wrote the verdict's row without
    // final_rounds.
    auto raw = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    ASSERT_TRUE(raw->Exec("INSERT INTO sweep_verdicts (sweep_id, verdict, best_knobs, decided_at) "
                          "VALUES (" +
                          std::to_string(sweep_id) +
                          ", 'within_noise', 'chunk_size=128KiB;eager_threshold=4KiB', "
                          "'2026-01-02T03:04:07.000Z')")
                    .ok());
  }
  auto store = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto sweep = (*store)->GetSweep(sweep_id);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->verdict, Verdict::kWithinNoise);
  EXPECT_EQ(sweep->verdict->final_rounds, 0u);
  EXPECT_TRUE(sweep->verdict->finalists.empty());
  EXPECT_FALSE(sweep->verdict->best_remeasured.has_value());
}

}  // namespace
}  // namespace artune::db
