// A sweep over a synthetic target whose first measurements are cold (slow, wide):
// the warm-up before the first trial absorbs them, the default is measured again at
// the end, and a best within the default's noise is not reported as beating it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <vector>

#include "artune/tuner/sweep.h"
#include "temp_db.h"

namespace artune::tuner {
namespace {

// Latency in us that settles from cold: the first calls are slow with wide intervals
// (as over a fresh connection), then every point measures `warm_us`, except the
// chunk size `fast_chunk` (when non-zero), which measures `fast_us`.
class ColdStartTarget final : public TrialTarget {
 public:
  ColdStartTarget(std::vector<double> cold_us, double warm_us, uint64_t fast_chunk = 0,
                  double fast_us = 0)
      : cold_us_(std::move(cold_us)),
        warm_us_(warm_us),
        fast_chunk_(fast_chunk),
        fast_us_(fast_us) {}

  std::string fabric() const override { return "tcp"; }
  std::string peer() const override { return "synthetic"; }

  Result<TrialMeasurement> Measure(const transport::Config& config, const Workload&) override {
    TrialMeasurement measurement;
    measurement.status = db::TrialStatus::kOk;
    measurement.validated = true;
    measurement.samples = 3;
    const size_t call = calls_++;
    if (call < cold_us_.size()) {
      measurement.objective = cold_us_[call];
      measurement.ci_low = cold_us_[call] * 0.6;
      measurement.ci_high = cold_us_[call] * 1.4;
      return measurement;
    }
    const double value = fast_chunk_ != 0 && config.chunk_size == fast_chunk_ ? fast_us_ : warm_us_;
    measurement.objective = value;
    measurement.ci_low = value * 0.95;
    measurement.ci_high = value * 1.05;
    return measurement;
  }

  size_t calls() const { return calls_; }

 private:
  std::vector<double> cold_us_;
  double warm_us_;
  uint64_t fast_chunk_;
  double fast_us_;
  size_t calls_ = 0;
};

// The transport's defaults: eager_threshold 16KiB, chunk_size 512KiB (on this grid).
SearchSpace GridWithTheDefault() {
  const std::vector<std::string> specs = {"eager_threshold=4KiB,16KiB", "chunk_size=128KiB,512KiB"};
  auto space = ParseSearchSpace(specs);
  EXPECT_TRUE(space.ok()) << space.status().ToString();
  return std::move(space).value();
}

const std::vector<double> kColdStart = {250, 180, 130};  // then warm: 100

TEST(SweepColdStart, ColdFirstMeasurementsDoNotMakeANonDefaultPointWin) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ColdStartTarget target(kColdStart, 100);
  auto outcome = RunSweep(**store, target, Workload{}, GridWithTheDefault(), transport::Config{},
                          SyntheticSweepRecord(), {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->warmup.has_value());
  EXPECT_TRUE(outcome->warmup->stable);
  EXPECT_GE(outcome->warmup->passes, kColdStart.size());
  ASSERT_TRUE(outcome->default_trial.has_value());
  EXPECT_EQ(outcome->default_trial->objective, 100) << "the default trial was measured cold";
  ASSERT_TRUE(outcome->best.has_value());
  EXPECT_EQ(db::TrialKnobKey(outcome->best->knobs), outcome->sweep.default_knobs)
      << "a point no faster than the default won";
  EXPECT_FALSE(outcome->best_beats_default);
  ASSERT_TRUE(outcome->default_remeasured.has_value());
  EXPECT_EQ(outcome->default_remeasured->id, 0);
  EXPECT_EQ(outcome->default_remeasured->objective, 100);
  // Stored: one trial per grid point, the re-measurement is not among them.
  EXPECT_EQ(outcome->trials.size(), 4u);
}

TEST(SweepColdStart, AResumedSweepWarmsUpBeforeItsFirstMeasuredTrial) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  const SearchSpace space = GridWithTheDefault();
  db::SweepRecord sweep = SyntheticSweepRecord();
  sweep.goal = "min";
  sweep.search_space = space.Canonical();
  sweep.default_knobs = "chunk_size=512KiB;eager_threshold=16KiB";
  auto id = (*store)->InsertSweep(sweep);
  ASSERT_TRUE(id.ok());
  db::TrialRecord trial;  // the default, measured warm before the "kill"
  trial.sweep_id = *id;
  trial.knobs = {{"eager_threshold", "16KiB"}, {"chunk_size", "512KiB"}};
  trial.status = db::TrialStatus::kOk;
  trial.objective = 100;
  trial.ci_low = 95;
  trial.ci_high = 105;
  trial.validated = true;
  ASSERT_TRUE((*store)->InsertTrial(trial).ok());
  auto stored = (*store)->GetSweep(*id);
  ASSERT_TRUE(stored.ok());

  ColdStartTarget target(kColdStart, 100);  // the resuming process starts cold again
  auto outcome = RunSweep(**store, target, Workload{}, space, transport::Config{}, *stored, {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->resumed, 1u);
  EXPECT_EQ(outcome->measured, 3u);
  for (const db::TrialRecord& measured : outcome->trials) {
    EXPECT_EQ(measured.objective, 100) << db::TrialKnobKey(measured.knobs) << " measured cold";
  }
  ASSERT_TRUE(outcome->best.has_value());
  EXPECT_EQ(db::TrialKnobKey(outcome->best->knobs), outcome->sweep.default_knobs);
  EXPECT_FALSE(outcome->best_beats_default);
}

TEST(SweepColdStart, AClearlyFasterPointBeatsTheDefault) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  ColdStartTarget target(kColdStart, 100, 128 * 1024, 50);
  auto outcome = RunSweep(**store, target, Workload{}, GridWithTheDefault(), transport::Config{},
                          SyntheticSweepRecord(), {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->best.has_value());
  EXPECT_EQ(outcome->best->knobs.at("chunk_size"), "128KiB");
  EXPECT_TRUE(outcome->best_beats_default);
}

TEST(SweepColdStart, AFasterPointInsideTheDefaultsIntervalIsWithinNoise) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  // 98 [93.1, 102.9] overlaps the default's 100 [95, 105].
  ColdStartTarget target(kColdStart, 100, 128 * 1024, 98);
  auto outcome = RunSweep(**store, target, Workload{}, GridWithTheDefault(), transport::Config{},
                          SyntheticSweepRecord(), {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->best.has_value());
  EXPECT_EQ(outcome->best->knobs.at("chunk_size"), "128KiB");
  EXPECT_FALSE(outcome->best_beats_default);
}

// The verdict the sweep stored, read back by a second store as `artune results`
// would, agrees with what RunSweep returned.
void ExpectStoredVerdict(const std::string& path, const SweepOutcome& outcome, db::Verdict want) {
  ASSERT_TRUE(outcome.sweep.verdict.has_value()) << "RunSweep did not read back a verdict";
  EXPECT_EQ(outcome.sweep.verdict->verdict, want);
  EXPECT_EQ(outcome.sweep.verdict->best_beats_default(), outcome.best_beats_default);
  auto reader = db::Store::Open(path, db::OpenMode::kExisting);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto stored = (*reader)->GetSweep(outcome.sweep.id);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_FALSE(stored->finished_at.empty());
  ASSERT_TRUE(stored->verdict.has_value());
  EXPECT_EQ(stored->verdict->verdict, want);
  EXPECT_EQ(stored->verdict->best_knobs,
            outcome.best ? db::TrialKnobKey(outcome.best->knobs) : std::string());
  EXPECT_FALSE(stored->verdict->decided_at.empty());
  ASSERT_EQ(stored->verdict->default_remeasured.has_value(),
            outcome.default_remeasured.has_value());
  // The best is measured again beside the default unless it is the default.
  ASSERT_EQ(stored->verdict->best_remeasured.has_value(), outcome.best_remeasured.has_value());
  if (outcome.best_remeasured) {
    EXPECT_EQ(stored->verdict->best_remeasured->knobs, outcome.best->knobs);
    EXPECT_EQ(stored->verdict->best_remeasured->objective, outcome.best_remeasured->objective);
  }
  // The winner of the final round is measured again beside the default unless the
  // default won it.
  EXPECT_EQ(outcome.best_remeasured.has_value(),
            outcome.default_remeasured.has_value() && outcome.best &&
                db::TrialKnobKey(outcome.best->knobs) != outcome.sweep.default_knobs);
  EXPECT_EQ(stored->verdict->final_rounds, outcome.sweep.verdict->final_rounds);
  ASSERT_EQ(stored->verdict->finalists.size(), outcome.sweep.verdict->finalists.size());
  for (size_t i = 0; i < stored->verdict->finalists.size(); ++i) {
    EXPECT_EQ(stored->verdict->finalists[i].pooled.knobs,
              outcome.sweep.verdict->finalists[i].pooled.knobs);
    EXPECT_EQ(stored->verdict->finalists[i].rounds_won,
              outcome.sweep.verdict->finalists[i].rounds_won);
  }
  if (!outcome.default_remeasured) return;
  const db::TrialRecord& again = *stored->verdict->default_remeasured;
  EXPECT_EQ(db::TrialKnobKey(again.knobs), outcome.sweep.default_knobs);
  EXPECT_EQ(again.status, outcome.default_remeasured->status);
  EXPECT_EQ(again.objective, outcome.default_remeasured->objective);
  EXPECT_EQ(again.ci_low, outcome.default_remeasured->ci_low);
  EXPECT_EQ(again.ci_high, outcome.default_remeasured->ci_high);
  EXPECT_EQ(again.samples, outcome.default_remeasured->samples);
  EXPECT_EQ(again.validated, outcome.default_remeasured->validated);
  EXPECT_FALSE(again.started_at.empty());
}

TEST(SweepColdStart, StoresTheVerdictItReturns) {
  struct Case {
    double fast_us;  // chunk_size 128KiB; 100 is the default's
    db::Verdict verdict;
  };
  for (const Case& c :
       {Case{100, db::Verdict::kDefaultIsBest}, Case{50, db::Verdict::kBeatsDefault},
        Case{98, db::Verdict::kWithinNoise}}) {
    SCOPED_TRACE(db::VerdictName(c.verdict));
    TempDb db;
    auto store = db::Store::Open(db.path());
    ASSERT_TRUE(store.ok());
    ColdStartTarget target(kColdStart, 100, 128 * 1024, c.fast_us);
    auto outcome = RunSweep(**store, target, Workload{}, GridWithTheDefault(), transport::Config{},
                            SyntheticSweepRecord(), {});
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    ExpectStoredVerdict(db.path(), *outcome, c.verdict);
  }
}

TEST(SweepColdStart, WithoutAReMeasurementTheVerdictRestsOnTheStoredDefault) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  ColdStartTarget target(kColdStart, 100, 128 * 1024, 50);
  SweepOptions options;
  options.remeasure_default = false;
  auto outcome = RunSweep(**store, target, Workload{}, GridWithTheDefault(), transport::Config{},
                          SyntheticSweepRecord(), {}, options);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_FALSE(outcome->default_remeasured.has_value());
  ExpectStoredVerdict(db.path(), *outcome, db::Verdict::kBeatsDefault);
}

TEST(SweepColdStart, AResumedSweepReplacesTheStoredVerdict) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  const SearchSpace space = GridWithTheDefault();
  ColdStartTarget first(kColdStart, 100, 128 * 1024, 50);
  auto outcome =
      RunSweep(**store, first, Workload{}, space, transport::Config{}, SyntheticSweepRecord(), {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ExpectStoredVerdict(db.path(), *outcome, db::Verdict::kBeatsDefault);

  // Resumed with every point stored: nothing is searched again, but the final round
  // runs again, and now every config measures 40 [38, 42]: the default is as good
  // as any, so it is the best.
  ColdStartTarget second({}, 40);
  auto resumed =
      RunSweep(**store, second, Workload{}, space, transport::Config{}, outcome->sweep, {});
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->measured, 0u);
  ASSERT_TRUE(resumed->default_remeasured.has_value());
  EXPECT_EQ(resumed->default_remeasured->objective, 40);
  EXPECT_FALSE(resumed->best_beats_default);
  ExpectStoredVerdict(db.path(), *resumed, db::Verdict::kDefaultIsBest);
  auto listed = (*store)->ListSweeps(0);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  ASSERT_TRUE((*listed)[0].verdict.has_value());
  EXPECT_EQ((*listed)[0].verdict->default_remeasured->objective, 40);
}

// Every payload corrupted: nothing validates, so there is no best.
class CorruptingTarget final : public TrialTarget {
 public:
  std::string fabric() const override { return "tcp"; }
  std::string peer() const override { return "synthetic"; }
  Result<TrialMeasurement> Measure(const transport::Config&, const Workload&) override {
    TrialMeasurement measurement;
    measurement.status = db::TrialStatus::kInvalid;
    measurement.validated = false;
    measurement.error = "checksum mismatch";
    return measurement;
  }
};

TEST(SweepColdStart, ASweepWithNoValidTrialStoresThatVerdict) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok());
  CorruptingTarget target;
  auto outcome = RunSweep(**store, target, Workload{}, GridWithTheDefault(), transport::Config{},
                          SyntheticSweepRecord(), {});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_FALSE(outcome->best.has_value());
  ExpectStoredVerdict(db.path(), *outcome, db::Verdict::kNoValidTrial);
}

db::TrialRecord Measured(std::map<std::string, std::string> knobs, double objective,
                         double half_width) {
  db::TrialRecord trial;
  trial.knobs = std::move(knobs);
  trial.status = db::TrialStatus::kOk;
  trial.validated = true;
  trial.objective = objective;
  trial.ci_low = objective - half_width;
  trial.ci_high = objective + half_width;
  return trial;
}

TEST(SweepColdStart, DecideVerdictWithoutAFinalRoundComparesTheSearchTrials) {
  const db::TrialRecord best = Measured({{"chunk_size", "128KiB"}}, 50, 5);
  const db::TrialRecord default_trial = Measured({{"chunk_size", "512KiB"}}, 100, 5);
  const std::string default_key = "chunk_size=512KiB";
  EXPECT_EQ(
      DecideVerdict({std::nullopt, default_trial, std::nullopt}, default_key, ObjectiveGoal::kMin)
          .verdict,
      db::Verdict::kNoValidTrial);
  EXPECT_EQ(
      DecideVerdict({default_trial, default_trial, std::nullopt}, default_key, ObjectiveGoal::kMin)
          .verdict,
      db::Verdict::kDefaultIsBest);
  const db::SweepVerdict beats =
      DecideVerdict({best, default_trial, std::nullopt}, default_key, ObjectiveGoal::kMin);
  EXPECT_EQ(beats.verdict, db::Verdict::kBeatsDefault);
  EXPECT_EQ(beats.best_knobs, "chunk_size=128KiB");
  EXPECT_EQ(beats.final_rounds, 0u);
  EXPECT_FALSE(beats.default_remeasured.has_value());
  const db::TrialRecord close = Measured({{"chunk_size", "128KiB"}}, 98, 8);
  EXPECT_EQ(
      DecideVerdict({close, default_trial, std::nullopt}, default_key, ObjectiveGoal::kMin).verdict,
      db::Verdict::kWithinNoise);
  // No default measured at all: any valid best beats it.
  EXPECT_EQ(
      DecideVerdict({best, std::nullopt, std::nullopt}, default_key, ObjectiveGoal::kMin).verdict,
      db::Verdict::kBeatsDefault);
}

TEST(SweepColdStart, DecideVerdictWithAFinalRoundJudgesOnlyItsPooledNumbers) {
  const std::string default_key = "chunk_size=512KiB";
  // The search flattered 128KiB (50) and measured the default cold (100).
  const db::TrialRecord search_best = Measured({{"chunk_size", "128KiB"}}, 50, 5);
  const db::TrialRecord default_trial = Measured({{"chunk_size", "512KiB"}}, 100, 5);
  auto final_round = [&](double winner, double winner_half, uint32_t won, double runner_up,
                         double default_pooled) {
    FinalRoundResult result;
    result.rounds = 3;
    result.default_pooled = Measured({{"chunk_size", "512KiB"}}, default_pooled, 4);
    db::FinalistRecord first{Measured({{"chunk_size", "1MiB"}}, winner, winner_half), won};
    db::FinalistRecord second{Measured({{"chunk_size", "128KiB"}}, runner_up, 4), 1};
    result.finalists = {first, second};
    return result;
  };
  // Re-measured, 1MiB is the winner and clear of the default in 3 of 3 rounds: the
  // verdict names it, not the search's best.
  db::SweepVerdict verdict =
      DecideVerdict({search_best, default_trial, final_round(60, 4, 3, 75, 90)}, default_key,
                    ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kBeatsDefault);
  EXPECT_EQ(verdict.best_knobs, "chunk_size=1MiB");
  EXPECT_EQ(verdict.final_rounds, 3u);
  ASSERT_EQ(verdict.finalists.size(), 2u);
  ASSERT_TRUE(verdict.best_remeasured.has_value());
  EXPECT_EQ(verdict.best_remeasured->objective, 60);
  ASSERT_TRUE(verdict.default_remeasured.has_value());
  EXPECT_EQ(verdict.default_remeasured->objective, 90);
  // Clear intervals but faster in only 1 of 3 rounds: within noise.
  EXPECT_EQ(DecideVerdict({search_best, default_trial, final_round(60, 4, 1, 75, 90)}, default_key,
                          ObjectiveGoal::kMin)
                .verdict,
            db::Verdict::kWithinNoise);
  // Faster in every round but the intervals overlap: within noise, winner named.
  verdict = DecideVerdict({search_best, default_trial, final_round(85, 4, 3, 88, 90)}, default_key,
                          ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kWithinNoise);
  EXPECT_EQ(verdict.best_knobs, "chunk_size=1MiB");
  // The default measured best in the final round: it is the best, whatever the
  // search said, and no winner is re-measured.
  verdict = DecideVerdict({search_best, default_trial, final_round(92, 4, 0, 95, 90)}, default_key,
                          ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kDefaultIsBest);
  EXPECT_EQ(verdict.best_knobs, default_key);
  EXPECT_FALSE(verdict.best_remeasured.has_value());
  // Every finalist failed when measured again: nothing is reliably better.
  FinalRoundResult failed = final_round(60, 4, 0, 75, 90);
  for (db::FinalistRecord& finalist : failed.finalists)
    finalist.pooled.status = db::TrialStatus::kFailed;
  verdict = DecideVerdict({search_best, default_trial, failed}, default_key, ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kWithinNoise);
  EXPECT_EQ(verdict.best_knobs, "chunk_size=128KiB");
  // Higher is better (bandwidth): the same rule mirrored.
  FinalRoundResult bandwidth = final_round(200, 10, 3, 150, 100);
  EXPECT_EQ(DecideVerdict({search_best, default_trial, bandwidth}, default_key, ObjectiveGoal::kMax)
                .verdict,
            db::Verdict::kBeatsDefault);
  EXPECT_EQ(DecideVerdict({search_best, default_trial, bandwidth}, default_key, ObjectiveGoal::kMin)
                .verdict,
            db::Verdict::kDefaultIsBest);
}

TEST(SweepColdStart, WarmUpStopsAtMaxPassesWhenNeverStable) {
  // Alternating 100 / 200 for ever: never two passes within 10 %.
  std::vector<double> unsettled;
  for (int i = 0; i < 40; ++i) unsettled.push_back(i % 2 == 0 ? 100 : 200);
  ColdStartTarget target(unsettled, 100);
  WarmupOptions options;
  options.max_passes = 5;
  auto report = target.WarmUp(transport::Config{}, Workload{}, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->passes, 5u);
  EXPECT_FALSE(report->stable);
  EXPECT_EQ(target.calls(), 5u);
}

TEST(SweepColdStart, WarmupOptionsAreValidated) {
  WarmupOptions options;
  EXPECT_TRUE(ValidateWarmupOptions(options).ok());
  options.min_passes = 1;
  EXPECT_FALSE(ValidateWarmupOptions(options).ok());
  options = {};
  options.max_passes = 1;
  EXPECT_FALSE(ValidateWarmupOptions(options).ok());
  options = {};
  options.tolerance = -0.1;
  EXPECT_FALSE(ValidateWarmupOptions(options).ok());
}

TEST(SweepColdStart, BeatsDefaultNeedsIntervalsApart) {
  db::TrialRecord best, default_trial;
  best.status = default_trial.status = db::TrialStatus::kOk;
  best.validated = default_trial.validated = true;
  default_trial.objective = 100;
  default_trial.ci_low = 95;
  default_trial.ci_high = 105;
  best.objective = 90;
  best.ci_low = 85;
  best.ci_high = 96;  // overlaps [95, 105]
  EXPECT_FALSE(BeatsDefault(best, default_trial, ObjectiveGoal::kMin));
  best.ci_high = 94;
  EXPECT_TRUE(BeatsDefault(best, default_trial, ObjectiveGoal::kMin));
  // Throughputs: the best's low end must clear the default's high end.
  best.objective = 120;
  best.ci_low = 104;
  best.ci_high = 130;
  EXPECT_FALSE(BeatsDefault(best, default_trial, ObjectiveGoal::kMax));
  best.ci_low = 106;
  EXPECT_TRUE(BeatsDefault(best, default_trial, ObjectiveGoal::kMax));
  default_trial.status = db::TrialStatus::kFailed;
  EXPECT_TRUE(BeatsDefault(best, default_trial, ObjectiveGoal::kMax));
  best.validated = false;
  EXPECT_FALSE(BeatsDefault(best, default_trial, ObjectiveGoal::kMax));
}

}  // namespace
}  // namespace artune::tuner
