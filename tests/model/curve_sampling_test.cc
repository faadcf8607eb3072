// How `artune model measure` spends its samples and sizes (curve_sampling.h),
// over scripted samples and curves whose shape is known.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <thread>
#include <vector>

#include "artune/model/curve_sampling.h"
#include "artune/model/link_model.h"

namespace artune::model {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// A sampler that replays `values` in order and counts the calls.
struct Scripted {
  std::vector<double> values;
  size_t calls = 0;
  std::function<Result<double>()> fn() {
    return [this]() -> Result<double> { return values.at(calls++); };
  }
};

TEST(SampleUntilStable, StopsOnceTwoSamplesAgreeAndLeavesTheBurstOut) {
  Scripted script{{100e-6, 50e-6, 52e-6, 51e-6}};
  auto figure = SampleUntilStable(StableOptions{}, script.fn());
  ASSERT_TRUE(figure.ok()) << figure.status().ToString();
  EXPECT_EQ(script.calls, 3u);  // 50 and 52 agree within 10 %: no fourth sample
  EXPECT_TRUE(figure->stable);
  EXPECT_NEAR(figure->value, 51e-6, 1e-12);  // the mean of the agreeing pair
  EXPECT_DOUBLE_EQ(figure->low, 50e-6);
  EXPECT_DOUBLE_EQ(figure->high, 100e-6);
  EXPECT_EQ(figure->samples, 3u);
}

TEST(SampleUntilStable, GivesUpAtMaxSamplesWithTheTightestPair) {
  Scripted script{{10.0, 20.0, 40.0, 80.0, 90.0, 1000.0}};
  auto figure = SampleUntilStable(StableOptions{}, script.fn());
  ASSERT_TRUE(figure.ok());
  EXPECT_EQ(script.calls, 5u);
  EXPECT_FALSE(figure->stable);
  EXPECT_NEAR(figure->value, 85.0, 1e-9);  // 80 and 90: the closest ratio
}

TEST(SampleUntilStable, BehindScheduleOneSampleIsTheFigure) {
  // What `model measure` asks of a point once its round is behind the budget.
  StableOptions options;
  options.agreeing = 1;
  Scripted script{{70e-6, 50e-6}};
  auto figure = SampleUntilStable(options, script.fn());
  ASSERT_TRUE(figure.ok());
  EXPECT_EQ(script.calls, 1u);
  EXPECT_TRUE(figure->stable);
  EXPECT_DOUBLE_EQ(figure->value, 70e-6);
}

TEST(SampleUntilStable, PastItsTimeTheSamplesSoFarStand) {
  StableOptions options;
  options.max_seconds = 1e-4;
  Scripted script{{30e-3, 20e-3, 20e-3}};
  auto slow = [&]() -> Result<double> {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a starved protocol's call
    return script.fn()();
  };
  auto figure = SampleUntilStable(options, slow);
  ASSERT_TRUE(figure.ok());
  EXPECT_EQ(script.calls, 1u);
  EXPECT_FALSE(figure->stable);
  EXPECT_DOUBLE_EQ(figure->value, 30e-3);
}

TEST(SampleUntilStable, PassesSampleErrorsAndRefusesBadOptions) {
  auto failing = SampleUntilStable(StableOptions{},
                                   []() -> Result<double> { return Status::Unavailable("gone"); });
  EXPECT_EQ(failing.status().code(), ErrorCode::kUnavailable);
  StableOptions options;
  options.agreeing = 6;  // above max_samples
  EXPECT_FALSE(SampleUntilStable(options, [] { return Result<double>(1.0); }).ok());
}

// A latency-bound then bandwidth-bound curve: 30 us + size / 1 GB/s, at one and
// four calls in flight (four: a quarter of the fixed cost).
std::vector<double> Smooth(uint64_t size) {
  const double transfer = static_cast<double>(size) / 1e9;
  return {30e-6 + transfer, 7.5e-6 + transfer};
}

TEST(SampleCurve, FewerSizesThanALog2LadderAndInterpolationStaysClose) {
  std::vector<uint64_t> asked;
  auto curve = SampleCurve(
      LadderOptions{},
      [&](uint64_t size) -> Result<std::vector<double>> {
        asked.push_back(size);
        return Smooth(size);
      },
      nullptr);
  ASSERT_TRUE(curve.ok()) << curve.status().ToString();
  EXPECT_EQ(asked.size(), curve->size());  // every size measured once
  EXPECT_LT(curve->size(), 11u);           // the old x4 ladder 64B..10MiB had 11 sizes
  EXPECT_TRUE(curve->contains(64) && curve->contains(10 * kMiB));
  for (size_t i = 0; i < 2; ++i) {
    std::vector<std::pair<double, double>> points;
    for (const auto& [size, values] : *curve) points.emplace_back(size, values[i]);
    for (uint64_t size = 64; size <= 8 * kMiB; size *= 2) {
      const double truth = Smooth(size)[i];
      EXPECT_NEAR(InterpolateLogLog(points, static_cast<double>(size)), truth, 0.2 * truth)
          << size << " B at " << (i == 0 ? 1 : 4) << " in flight";
    }
  }
}

TEST(SampleCurve, RefinesAroundAStepAndStopsWhenTold) {
  // A protocol switch inside the curve: 10 us under 64 KiB, 200 us from it on.
  auto step = [](uint64_t size) -> Result<std::vector<double>> {
    return std::vector<double>{size < 64 * kKiB ? 10e-6 : 200e-6};
  };
  auto curve = SampleCurve(LadderOptions{}, step, nullptr);
  ASSERT_TRUE(curve.ok());
  EXPECT_TRUE(curve->contains(32 * kKiB) && curve->contains(64 * kKiB)) << "the step is bracketed";
  auto coarse = SampleCurve(LadderOptions{}, step, [] { return false; });
  ASSERT_TRUE(coarse.ok());
  const std::vector<uint64_t> ladder = {64,         512,      4 * kKiB, 32 * kKiB,
                                        256 * kKiB, 2 * kMiB, 10 * kMiB};
  ASSERT_EQ(coarse->size(), ladder.size());
  for (uint64_t size : ladder) EXPECT_TRUE(coarse->contains(size)) << size;
}

TEST(SampleCurve, RefusesALadderThatCannotBeWalked) {
  auto any = [](uint64_t) -> Result<std::vector<double>> { return std::vector<double>{1.0}; };
  LadderOptions options;
  options.coarse_factor = 6;
  EXPECT_FALSE(SampleCurve(options, any, nullptr).ok());
  options = LadderOptions{};
  options.first = 0;
  EXPECT_FALSE(SampleCurve(options, any, nullptr).ok());
}

}  // namespace
}  // namespace artune::model
