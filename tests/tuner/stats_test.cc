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

}  // namespace
}  // namespace artune::tuner
