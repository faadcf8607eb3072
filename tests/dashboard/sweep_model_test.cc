// SummarizeSweep: heatmap axes sorted by value, best cell by goal, the chosen
// config starred, levels, ETA.
#include "sweep_model.h"

#include <gtest/gtest.h>

namespace artune::dashboard {
namespace {

SweepTrial Trial(const std::string& eager, const std::string& chunk, double objective,
                 db::TrialStatus status = db::TrialStatus::kOk, double duration_s = 2) {
  SweepTrial trial;
  trial.knobs = {{"eager_threshold", eager}, {"chunk_size", chunk}};
  trial.status = status;
  trial.validated = status == db::TrialStatus::kOk;
  trial.objective = objective;
  trial.ci_low = objective * 0.9;
  trial.ci_high = objective * 1.1;
  trial.duration_s = duration_s;
  return trial;
}

SweepInput Input(const std::string& goal) {
  SweepInput input;
  input.id = 7;
  input.objective = goal == "min" ? "latency-p50" : "bandwidth";
  input.goal = goal;
  input.strategy = "grid";
  input.workload = "scheme:skew";
  return input;
}

TEST(SweepModelTest, AxesAreSortedByByteValueNotText) {
  EXPECT_EQ(SortKnobValues("eager_threshold", {"64KiB", "256B", "4KiB", "1MiB"}),
            (std::vector<std::string>{"256B", "4KiB", "64KiB", "1MiB"}));
  // Unparsable values go last, by text.
  EXPECT_EQ(SortKnobValues("chunk_size", {"zz", "1MiB", "?"}),
            (std::vector<std::string>{"1MiB", "?", "zz"}));
}

TEST(SweepModelTest, MinGoalMarksTheLowestCellBest) {
  SweepInput input = Input("min");
  input.trials = {Trial("4KiB", "64KiB", 30), Trial("256B", "64KiB", 10), Trial("4KiB", "1MiB", 50),
                  Trial("256B", "1MiB", 20)};
  SweepSummary summary = SummarizeSweep(input);
  // Axis values are in the knob table's format ("256B" is "256").
  ASSERT_EQ(summary.eager_values, (std::vector<std::string>{"256", "4KiB"}));
  ASSERT_EQ(summary.chunk_values, (std::vector<std::string>{"64KiB", "1MiB"}));
  ASSERT_TRUE(summary.best);
  EXPECT_DOUBLE_EQ(summary.best->objective, 10);
  EXPECT_TRUE(summary.cells[0][0].chosen);
  EXPECT_EQ(summary.cells[0][0].level, kHeatLevels - 1);
  EXPECT_EQ(summary.cells[1][1].level, 0);  // 50: the worst
  EXPECT_EQ(summary.cells[1][0].level, 2);  // 30: half way
  EXPECT_FALSE(summary.cells[1][1].chosen);
  EXPECT_EQ(summary.done, 4u);
  EXPECT_EQ(summary.ok, 4u);
}

TEST(SweepModelTest, MaxGoalMarksTheHighestCellBest) {
  SweepInput input = Input("max");
  input.trials = {Trial("4KiB", "64KiB", 300), Trial("256B", "64KiB", 900)};
  SweepSummary summary = SummarizeSweep(input);
  ASSERT_TRUE(summary.best);
  EXPECT_DOUBLE_EQ(summary.best->objective, 900);
  EXPECT_TRUE(summary.cells[0][0].chosen);
  EXPECT_EQ(summary.cells[0][0].level, kHeatLevels - 1);
  EXPECT_EQ(summary.cells[1][0].level, 0);
}

TEST(SweepModelTest, FailedTrialsAreMeasuredButNeverBest) {
  SweepInput input = Input("min");
  input.trials = {Trial("256B", "64KiB", 1, db::TrialStatus::kInvalid), Trial("4KiB", "64KiB", 40)};
  SweepSummary summary = SummarizeSweep(input);
  EXPECT_TRUE(summary.cells[0][0].measured);
  EXPECT_FALSE(summary.cells[0][0].usable);
  EXPECT_FALSE(summary.cells[0][0].chosen);
  EXPECT_TRUE(summary.cells[1][0].chosen);
  EXPECT_EQ(summary.ok, 1u);
}

TEST(SweepModelTest, AxisValueFallsBackToTheTrialConfig) {
  SweepInput input = Input("min");
  SweepTrial trial;
  trial.knobs = {{"eager_threshold", "8KiB"}};
  trial.config = {{"chunk_size", "512KiB"}, {"eager_threshold", "8KiB"}};
  trial.status = db::TrialStatus::kOk;
  trial.validated = true;
  trial.objective = 5;
  input.trials = {trial};
  SweepSummary summary = SummarizeSweep(input);
  EXPECT_EQ(summary.chunk_values, (std::vector<std::string>{"512KiB"}));
}

TEST(SweepModelTest, EtaIsRemainingTrialsTimesMeanDuration) {
  SweepInput input = Input("min");
  input.planned_trials = 10;
  input.trials = {Trial("256B", "64KiB", 1, db::TrialStatus::kOk, 2),
                  Trial("4KiB", "64KiB", 2, db::TrialStatus::kOk, 4)};
  SweepSummary summary = SummarizeSweep(input);
  ASSERT_TRUE(summary.eta_s);
  EXPECT_DOUBLE_EQ(*summary.eta_s, 8 * 3.0);
  EXPECT_DOUBLE_EQ(summary.trial_seconds, 6);
  input.finished_at = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(SummarizeSweep(input).eta_s);
}

TEST(SweepModelTest, EqualObjectivesAllGetTheBestLevel) {
  SweepInput input = Input("min");
  input.trials = {Trial("256B", "64KiB", 5), Trial("4KiB", "64KiB", 5)};
  SweepSummary summary = SummarizeSweep(input);
  EXPECT_EQ(summary.cells[0][0].level, kHeatLevels - 1);
  EXPECT_EQ(summary.cells[1][0].level, kHeatLevels - 1);
  // Ties go to the earlier trial.
  EXPECT_TRUE(summary.cells[0][0].chosen);
  EXPECT_FALSE(summary.cells[1][0].chosen);
}

// The final round chose 1MiB over the search's best trial (64KiB): once the sweep
// is finished the star goes to the chosen config, the one `apply config` writes.
TEST(SweepModelTest, AFinishedSweepStarsTheConfigTheVerdictChoseNotTheSearchsBest) {
  SweepInput input = Input("min");
  input.trials = {Trial("256B", "64KiB", 10), Trial("256B", "1MiB", 11)};
  input.verdict = db::Verdict::kBeatsDefault;
  input.chosen_knobs = "chunk_size=1MiB;eager_threshold=256B";
  input.finished_at = "2026-01-01T00:00:00.000Z";
  SweepSummary summary = SummarizeSweep(input);
  ASSERT_TRUE(summary.best);
  ASSERT_TRUE(summary.chosen);
  EXPECT_DOUBLE_EQ(summary.best->objective, 10);
  EXPECT_DOUBLE_EQ(summary.chosen->objective, 11);
  EXPECT_FALSE(summary.cells[0][0].chosen);
  EXPECT_TRUE(summary.cells[0][1].chosen);

  // While it runs (a resumed sweep keeps its old verdict) the search's best is what
  // `apply config` would take.
  input.finished_at.clear();
  summary = SummarizeSweep(input);
  ASSERT_TRUE(summary.chosen);
  EXPECT_DOUBLE_EQ(summary.chosen->objective, 10);
  EXPECT_TRUE(summary.cells[0][0].chosen);
  EXPECT_FALSE(summary.cells[0][1].chosen);
}

}  // namespace
}  // namespace artune::dashboard
