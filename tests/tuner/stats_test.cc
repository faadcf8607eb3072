#include "artune/tuner/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace artune::tuner {
namespace {

std::vector<double> OneToN(int n) {
  std::vector<double> v;
  for (int i = n; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  return v;
}

TEST(StatsTest, SummaryOfOneToHundred) {
  auto samples = OneToN(100);
  Summary s = Summarize(samples);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);
  EXPECT_NEAR(s.p99, 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_NEAR(s.stddev, 29.011491975882016, 1e-9);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
}

TEST(StatsTest, EmptyAndSingle) {
  EXPECT_EQ(Summarize({}).count, 0u);
  std::vector<double> one = {7};
  Summary s = Summarize(one);
  EXPECT_DOUBLE_EQ(s.p50, 7);
  EXPECT_DOUBLE_EQ(s.p99, 7);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
}

TEST(StatsTest, QuantileInterpolates) {
  std::vector<double> sorted = {10, 20};
  EXPECT_DOUBLE_EQ(QuantileOfSorted(sorted, 0.25), 12.5);
  EXPECT_DOUBLE_EQ(QuantileOfSorted(sorted, 1.0), 20);
}

TEST(StatsTest, MedianIntervalOfHundredSamples) {
  auto samples = OneToN(100);
  MedianEstimate m = MedianWithConfidence(samples, 0.95);
  EXPECT_DOUBLE_EQ(m.median, 50.5);
  EXPECT_GE(m.achieved_confidence, 0.95);
  // The classic order statistics for n = 100 at 95 %: x(40) .. x(61) (1-based).
  EXPECT_DOUBLE_EQ(m.low, 40);
  EXPECT_DOUBLE_EQ(m.high, 61);
}

TEST(StatsTest, MedianIntervalWithTooFewSamplesSaysSo) {
  std::vector<double> samples = {3, 1, 2};
  MedianEstimate m = MedianWithConfidence(samples, 0.95);
  EXPECT_DOUBLE_EQ(m.median, 2);
  EXPECT_DOUBLE_EQ(m.low, 1);
  EXPECT_DOUBLE_EQ(m.high, 3);
  EXPECT_DOUBLE_EQ(m.achieved_confidence, 0.75);
}

// The lab's pairs for chunk_size 4MiB against 512KiB (ResNet-50 full-size capture):
// 13 of 16 pairs favour the candidate, one by 28 %. 16 pairs put the 95 % interval
// of the median at ranks 4..13, which here starts at 1.00x: not beyond noise.
TEST(PairedVerdictTest, SixteenLabPairsWithAFewPercentEdgeAreWithinNoise) {
  const std::vector<double> pairs = {0.97, 1.17, 1.04, 1.07, 1.17, 1.02, 0.94, 1.04,
                                     1.01, 1.10, 1.02, 0.99, 1.00, 1.10, 1.28, 1.13};
  const PairedVerdict verdict = JudgePairedSpeedups(pairs);
  EXPECT_EQ(verdict.outcome, PairedOutcome::kWithinNoise);
  EXPECT_NEAR(verdict.estimate.median, 1.04, 1e-9);
  EXPECT_DOUBLE_EQ(verdict.estimate.low, 1.00);
  EXPECT_EQ(verdict.estimate.count, 16u);
  EXPECT_STREQ(PairedOutcomeName(verdict.outcome), "within_noise");
}

TEST(PairedVerdictTest, AnIntervalAboveOrBelowOneDecides) {
  std::vector<double> faster(12, 1.05);
  faster[0] = 0.70;  // one pair hit by a stall moves nothing
  faster[1] = 2.00;
  EXPECT_EQ(JudgePairedSpeedups(faster).outcome, PairedOutcome::kFaster);
  // 8 pairs: the 95 % interval is [min, max], so one pair above 1 keeps it open.
  std::vector<double> slower(8, 0.83);
  slower[7] = 0.97;
  EXPECT_EQ(JudgePairedSpeedups(slower).outcome, PairedOutcome::kSlower);
  slower[7] = 1.02;
  EXPECT_EQ(JudgePairedSpeedups(slower).outcome, PairedOutcome::kWithinNoise);
  EXPECT_STREQ(PairedOutcomeName(PairedOutcome::kSlower), "slower");
}

TEST(PairedVerdictTest, FewerThanSixPairsDecideNothing) {
  const std::vector<double> five(5, 1.5);
  const PairedVerdict verdict = JudgePairedSpeedups(five);
  EXPECT_EQ(verdict.outcome, PairedOutcome::kTooFewPairs);
  EXPECT_LT(verdict.estimate.achieved_confidence, 0.95);
  EXPECT_EQ(JudgePairedSpeedups(std::vector<double>(6, 1.5)).outcome, PairedOutcome::kFaster);
  EXPECT_STREQ(PairedOutcomeName(PairedOutcome::kTooFewPairs), "too_few_pairs");
}

}  // namespace
}  // namespace artune::tuner
