// The sweep's final round (final_round.h): finalists picked from the search,
// measured again with the default in interleaved rounds, pooled, and the winner
// chosen on those numbers — so a point that was lucky once does not win.
#include "artune/tuner/final_round.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "artune/tuner/sweep.h"
#include "temp_db.h"

namespace artune::tuner {
namespace {

db::TrialRecord Trial(std::map<std::string, std::string> knobs, double objective,
                      db::TrialStatus status = db::TrialStatus::kOk) {
  db::TrialRecord trial;
  trial.knobs = std::move(knobs);
  trial.status = status;
  trial.validated = trial.status == db::TrialStatus::kOk;
  trial.objective = objective;
  trial.ci_low = objective * 0.95;
  trial.ci_high = objective * 1.05;
  return trial;
}

TEST(FinalRound, PickFinalistsTakesTheBestValidNonDefaultPoints) {
  const std::vector<db::TrialRecord> trials = {
      Trial({{"chunk_size", "512KiB"}}, 10),  // the default: never a finalist
      Trial({{"chunk_size", "16KiB"}}, 90),
      Trial({{"chunk_size", "1MiB"}}, 40),
      Trial({{"chunk_size", "4KiB"}}, 5, db::TrialStatus::kInvalid),  // corrupted: never a finalist
      Trial({{"chunk_size", "2MiB"}}, 60),
      Trial({{"chunk_size", "4MiB"}}, 70),
  };
  const auto lowest = PickFinalists(trials, "chunk_size=512KiB", ObjectiveGoal::kMin, 3);
  ASSERT_EQ(lowest.size(), 3u);
  EXPECT_EQ(lowest[0].knobs.at("chunk_size"), "1MiB");
  EXPECT_EQ(lowest[1].knobs.at("chunk_size"), "2MiB");
  EXPECT_EQ(lowest[2].knobs.at("chunk_size"), "4MiB");
  const auto highest = PickFinalists(trials, "chunk_size=512KiB", ObjectiveGoal::kMax, 2);
  ASSERT_EQ(highest.size(), 2u);
  EXPECT_EQ(highest[0].knobs.at("chunk_size"), "16KiB");
  EXPECT_EQ(highest[1].knobs.at("chunk_size"), "4MiB");
  EXPECT_TRUE(
      PickFinalists({trials[0], trials[3]}, "chunk_size=512KiB", ObjectiveGoal::kMin, 3).empty());
}

TEST(FinalRound, PoolRoundsTakesTheMedianOfEverySample) {
  std::vector<TrialMeasurement> rounds(3);
  const std::vector<std::vector<double>> values = {{10, 11, 12}, {30, 31, 32}, {13, 14, 15}};
  for (size_t i = 0; i < rounds.size(); ++i) {
    rounds[i].status = db::TrialStatus::kOk;
    rounds[i].validated = true;
    rounds[i].values = values[i];
    rounds[i].samples = values[i].size();
    rounds[i].objective = values[i][1];
    rounds[i].duration_s = 1.5;
    rounds[i].metrics = {{"p50_us", static_cast<double>(i)}};
  }
  const db::TrialRecord pooled = PoolRounds(7, {{"chunk_size", "1MiB"}}, rounds);
  EXPECT_EQ(pooled.id, 0);
  EXPECT_EQ(pooled.sweep_id, 7);
  EXPECT_EQ(pooled.status, db::TrialStatus::kOk);
  EXPECT_TRUE(pooled.validated);
  EXPECT_EQ(pooled.objective, 14);  // the 5th of the 9 samples
  EXPECT_LE(pooled.ci_low, 14);
  EXPECT_GE(pooled.ci_high, 14);
  EXPECT_GE(pooled.ci_low, 10);
  EXPECT_LE(pooled.ci_high, 32);
  EXPECT_EQ(pooled.samples, 9u);
  EXPECT_EQ(pooled.remeasured, 2u);
  EXPECT_DOUBLE_EQ(pooled.duration_s, 4.5);
  EXPECT_EQ(pooled.metrics.at("p50_us"), 1);

  // Without samples: the medians of the rounds' own numbers.
  for (auto& round : rounds) round.values.clear();
  rounds[0].ci_low = 9;
  rounds[1].ci_low = 29;
  rounds[2].ci_low = 12;
  const db::TrialRecord medians = PoolRounds(7, {{"chunk_size", "1MiB"}}, rounds);
  EXPECT_EQ(medians.objective, 14);
  EXPECT_EQ(medians.ci_low, 12);

  // One corrupted round makes the whole record invalid, with its error.
  rounds[1].status = db::TrialStatus::kInvalid;
  rounds[1].validated = false;
  rounds[1].error = "checksum mismatch in slice 3";
  const db::TrialRecord invalid = PoolRounds(7, {{"chunk_size", "1MiB"}}, rounds);
  EXPECT_EQ(invalid.status, db::TrialStatus::kInvalid);
  EXPECT_FALSE(invalid.validated);
  EXPECT_EQ(invalid.error, "checksum mismatch in slice 3");
}

// A valid measurement of `value`: three samples, 1 % either side of it.
TrialMeasurement OkMeasurement(double value) {
  TrialMeasurement measurement;
  measurement.status = db::TrialStatus::kOk;
  measurement.validated = true;
  measurement.values = {value * 0.99, value, value * 1.01};
  measurement.samples = 3;
  measurement.objective = value;
  measurement.ci_low = value * 0.99;
  measurement.ci_high = value * 1.01;
  return measurement;
}

// A synthetic link: each chunk size measures a fixed value (three samples of it),
// except that `lucky` chunk size measures `lucky_value` on its first measurement
// only; `broken` chunk size corrupts every payload. Records the order of the
// measurements.
class ScriptedTarget final : public TrialTarget {
 public:
  std::map<uint64_t, double> values;  // chunk size -> latency us
  uint64_t lucky = 0;
  double lucky_value = 0;
  uint64_t broken = 0;
  std::vector<uint64_t> order;

  std::string fabric() const override { return "tcp"; }
  std::string peer() const override { return "synthetic"; }

  Result<TrialMeasurement> Measure(const transport::Config& config, const Workload&) override {
    order.push_back(config.chunk_size);
    const size_t seen = ++measured_[config.chunk_size];
    if (config.chunk_size == broken) {
      TrialMeasurement measurement;
      measurement.status = db::TrialStatus::kInvalid;
      measurement.error = "checksum mismatch";
      return measurement;
    }
    const double value = config.chunk_size == lucky && seen == 1 ? lucky_value
                         : values.count(config.chunk_size)       ? values.at(config.chunk_size)
                                                                 : 100.0;
    return OkMeasurement(value);
  }

 private:
  std::map<uint64_t, size_t> measured_;
};

constexpr uint64_t kKiB = 1024;

TEST(FinalRound, RoundsAlternateTheirOrderAndCountRoundsWon) {
  ScriptedTarget target;
  target.values = {{512 * kKiB, 100}, {1024 * kKiB, 80}, {2048 * kKiB, 120}};
  const std::map<std::string, std::string> default_knobs = {{"chunk_size", "512KiB"}};
  const std::vector<db::TrialRecord> finalists = {Trial({{"chunk_size", "2MiB"}}, 60),
                                                  Trial({{"chunk_size", "1MiB"}}, 70)};
  FinalRoundOptions options;
  options.rounds = 3;
  std::vector<std::string> reported;
  auto result = RunFinalRound(target, Workload{}, transport::Config{}, 1, default_knobs, finalists,
                              ObjectiveGoal::kMin, options,
                              [&](size_t n, size_t total, const std::string& knobs) {
                                EXPECT_EQ(total, 9u);
                                EXPECT_EQ(n, reported.size() + 1);
                                reported.push_back(knobs);
                              });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const std::vector<uint64_t> want = {512 * kKiB,  2048 * kKiB, 1024 * kKiB,  // forward
                                      1024 * kKiB, 2048 * kKiB, 512 * kKiB,   // backward
                                      512 * kKiB,  2048 * kKiB, 1024 * kKiB};
  EXPECT_EQ(target.order, want);
  EXPECT_EQ(reported.size(), 9u);
  EXPECT_EQ(result->rounds, 3u);
  EXPECT_EQ(result->default_pooled.objective, 100);
  EXPECT_EQ(result->default_pooled.samples, 9u);
  ASSERT_EQ(result->finalists.size(), 2u);
  // Ranked by the final round, not by the search: 1MiB (80) before 2MiB (120).
  EXPECT_EQ(result->finalists[0].pooled.knobs.at("chunk_size"), "1MiB");
  EXPECT_EQ(result->finalists[0].pooled.objective, 80);
  EXPECT_EQ(result->finalists[0].rounds_won, 3u);
  EXPECT_EQ(result->finalists[1].rounds_won, 0u);
  // The k-th sample of a round pairs with the default's k-th of that round.
  const std::vector<double>& faster = result->paired_speedups.at("chunk_size=1MiB");
  const std::vector<double>& slower = result->paired_speedups.at("chunk_size=2MiB");
  ASSERT_EQ(faster.size(), 9u);
  ASSERT_EQ(slower.size(), 9u);
  for (double speedup : faster) EXPECT_NEAR(speedup, 100.0 / 80.0, 1e-9);
  for (double speedup : slower) EXPECT_NEAR(speedup, 100.0 / 120.0, 1e-9);
  const std::optional<PairedVerdict> pairs = WinnerPairs(*result);
  ASSERT_TRUE(pairs.has_value());
  EXPECT_EQ(pairs->outcome, PairedOutcome::kFaster);
}

// A target that gets 25 % slower with every measurement (a drifting machine), with
// one finalist 10 % faster than the default and one 5 % faster.
class DriftingTarget final : public TrialTarget {
 public:
  std::map<uint64_t, double> factor;  // chunk size -> time relative to the default
  std::string fabric() const override { return "tcp"; }
  std::string peer() const override { return "synthetic"; }
  Result<TrialMeasurement> Measure(const transport::Config& config, const Workload&) override {
    // Every measurement runs 25 % slower than the one before it.
    speed_ *= 1.25;
    const double value = speed_ * (factor.count(config.chunk_size) ? factor[config.chunk_size] : 1);
    return OkMeasurement(value);
  }

 private:
  double speed_ = 10;
};

TEST(FinalRound, UnderDriftFinalistsAreRankedByTheirPairsWithTheDefault) {
  DriftingTarget target;
  // Round order: default, 2MiB, 1MiB (forward), then 1MiB, 2MiB, default, ... The
  // pooled medians mix the drift in and put 2MiB first (about 42.7 against 44.3);
  // the same-round pairs, in alternating order, cancel it: medians 1.22 for 1MiB
  // and 1.08 for 2MiB.
  target.factor = {{1024 * kKiB, 0.90}, {2048 * kKiB, 0.95}};
  const std::vector<db::TrialRecord> finalists = {Trial({{"chunk_size", "2MiB"}}, 50),
                                                  Trial({{"chunk_size", "1MiB"}}, 60)};
  FinalRoundOptions options;
  options.rounds = 4;
  auto result = RunFinalRound(target, Workload{}, transport::Config{}, 1,
                              {{"chunk_size", "512KiB"}}, finalists, ObjectiveGoal::kMin, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->finalists.size(), 2u);
  EXPECT_EQ(result->finalists[0].pooled.knobs.at("chunk_size"), "1MiB");
  EXPECT_LT(result->finalists[1].pooled.objective, result->finalists[0].pooled.objective);
  const std::optional<PairedVerdict> pairs = WinnerPairs(*result);
  ASSERT_TRUE(pairs.has_value());
  EXPECT_EQ(pairs->estimate.count, 12u);
  EXPECT_NEAR(pairs->estimate.median, (12.5 / 17.578125 + 38.147 / 21.972656) / 2, 0.01);
}

// A final round over a drifting machine: the default and the winner swing together
// from round to round, so their pooled intervals overlap, but within each round the
// winner is a few per cent faster. The same-round pairs see that; the pooled
// intervals alone would call it noise. Pairs that straddle 1 call it noise, and too
// few pairs leave the decision to the pooled intervals.
TEST(FinalRound, TheVerdictRestsOnSameRoundPairsWhenThereAreEnough) {
  FinalRoundResult round;
  round.rounds = 3;
  round.default_pooled = Trial({{"chunk_size", "512KiB"}}, 100);
  round.default_pooled.ci_low = 80;
  round.default_pooled.ci_high = 125;
  db::FinalistRecord winner;
  winner.pooled = Trial({{"chunk_size", "2MiB"}}, 95);
  winner.pooled.ci_low = 76;
  winner.pooled.ci_high = 119;
  winner.rounds_won = 3;
  round.finalists = {winner};
  ASSERT_FALSE(BeatsDefault(winner.pooled, round.default_pooled, ObjectiveGoal::kMin));

  VerdictEvidence evidence;
  evidence.search_best = Trial({{"chunk_size", "2MiB"}}, 90);
  evidence.final_round = round;
  evidence.final_round->paired_speedups["chunk_size=2MiB"] = {1.04, 1.06, 1.05, 1.03, 1.07,
                                                              1.05, 1.04, 1.06, 1.02};
  db::SweepVerdict verdict = DecideVerdict(evidence, "chunk_size=512KiB", ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kBeatsDefault);
  EXPECT_EQ(verdict.best_knobs, "chunk_size=2MiB");

  evidence.final_round->paired_speedups["chunk_size=2MiB"] = {1.04, 0.97, 1.05, 0.99, 1.07,
                                                              0.95, 1.04, 1.01, 0.98};
  verdict = DecideVerdict(evidence, "chunk_size=512KiB", ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kWithinNoise);

  // Five pairs decide nothing: the pooled intervals overlap, so within noise.
  evidence.final_round->paired_speedups["chunk_size=2MiB"] = {1.04, 1.06, 1.05, 1.03, 1.07};
  EXPECT_FALSE(WinnerPairs(*evidence.final_round).has_value());
  verdict = DecideVerdict(evidence, "chunk_size=512KiB", ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kWithinNoise);

  // Better by the pooled medians (95 against 100) but not by its pairs: the
  // default is best, and it is what gets applied.
  evidence.final_round->paired_speedups["chunk_size=2MiB"] = {0.98, 1.01, 0.97, 0.99, 1.00,
                                                              0.96, 1.02, 0.99, 0.98};
  verdict = DecideVerdict(evidence, "chunk_size=512KiB", ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kDefaultIsBest);
  EXPECT_EQ(verdict.best_knobs, "chunk_size=512KiB");

  // Faster by the pairs but in only 1 of 3 rounds: not beaten.
  evidence.final_round->paired_speedups["chunk_size=2MiB"] = {1.04, 1.06, 1.05, 1.03, 1.07,
                                                              1.05, 1.04, 1.06, 1.02};
  evidence.final_round->finalists[0].rounds_won = 1;
  verdict = DecideVerdict(evidence, "chunk_size=512KiB", ObjectiveGoal::kMin);
  EXPECT_EQ(verdict.verdict, db::Verdict::kWithinNoise);
}

TEST(FinalRound, AFinalistThatCorruptsIsDroppedAndRankedLast) {
  ScriptedTarget target;
  target.values = {{512 * kKiB, 100}, {1024 * kKiB, 50}, {2048 * kKiB, 90}};
  target.broken = 1024 * kKiB;  // it measured fine in the search (its trial below)
  const std::vector<db::TrialRecord> finalists = {Trial({{"chunk_size", "1MiB"}}, 50),
                                                  Trial({{"chunk_size", "2MiB"}}, 90)};
  auto result =
      RunFinalRound(target, Workload{}, transport::Config{}, 1, {{"chunk_size", "512KiB"}},
                    finalists, ObjectiveGoal::kMin, FinalRoundOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  // Measured once in the final round (it corrupted), never again.
  EXPECT_EQ(std::count(target.order.begin(), target.order.end(), 1024 * kKiB), 1);
  ASSERT_EQ(result->finalists.size(), 2u);
  EXPECT_EQ(result->finalists[0].pooled.knobs.at("chunk_size"), "2MiB");
  EXPECT_EQ(result->finalists[1].pooled.status, db::TrialStatus::kInvalid);
  EXPECT_EQ(result->finalists[1].rounds_won, 0u);
}

TEST(FinalRound, RefusesBadOptionsAndAnEmptyFinal) {
  ScriptedTarget target;
  FinalRoundOptions options;
  options.rounds = 0;
  EXPECT_EQ(ValidateFinalRoundOptions(options).code(), ErrorCode::kInvalidArgument);
  options.rounds = 3;
  options.finalists = 17;
  EXPECT_EQ(ValidateFinalRoundOptions(options).code(), ErrorCode::kInvalidArgument);
  auto empty = RunFinalRound(target, Workload{}, transport::Config{}, 1, {{"chunk_size", "512KiB"}},
                             {}, ObjectiveGoal::kMin, FinalRoundOptions{});
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(target.order.empty());
}

// The winner's curse end to end: 256KiB measures 40 once during the search (luck)
// and 100 ever after; 1MiB is really faster (70). The search's best is 256KiB, the
// final round picks 1MiB, and that is what the verdict names and stores.
TEST(FinalRound, ASweepDoesNotCrownAPointThatWasLuckyOnce) {
  TempDb db;
  auto store = db::Store::Open(db.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ScriptedTarget target;
  target.values = {{1024 * kKiB, 70}};
  target.lucky = 256 * kKiB;
  target.lucky_value = 40;
  const std::vector<std::string> specs = {"chunk_size=128KiB,256KiB,512KiB,1MiB"};
  auto space = ParseSearchSpace(specs);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  SweepOptions options;
  options.warmup.max_passes = 2;
  auto outcome = RunSweep(**store, target, Workload{}, *space, transport::Config{},
                          SyntheticSweepRecord(), {}, options);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->search_best.has_value());
  EXPECT_EQ(outcome->search_best->knobs.at("chunk_size"), "256KiB");
  ASSERT_TRUE(outcome->best.has_value());
  EXPECT_EQ(outcome->best->knobs.at("chunk_size"), "1MiB");
  EXPECT_TRUE(outcome->best_beats_default);
  ASSERT_TRUE(outcome->best_remeasured.has_value());
  EXPECT_EQ(outcome->best_remeasured->objective, 70);

  auto stored = (*store)->GetSweep(outcome->sweep.id);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_TRUE(stored->verdict.has_value());
  EXPECT_EQ(stored->verdict->verdict, db::Verdict::kBeatsDefault);
  EXPECT_EQ(stored->verdict->best_knobs, "chunk_size=1MiB");
  EXPECT_EQ(stored->verdict->final_rounds, 3u);
  ASSERT_EQ(stored->verdict->finalists.size(), 3u);
  EXPECT_EQ(stored->verdict->finalists[0].pooled.knobs.at("chunk_size"), "1MiB");
  EXPECT_EQ(stored->verdict->finalists[0].rounds_won, 3u);
  // The trials keep what the search measured: the lucky value is not rewritten.
  auto trials = (*store)->ListTrials(outcome->sweep.id);
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ(trials->size(), 4u);
}

}  // namespace
}  // namespace artune::tuner
