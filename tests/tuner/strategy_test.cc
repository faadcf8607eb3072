// Grid and adaptive strategies on synthetic surfaces with a known optimum.
#include "artune/tuner/strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace artune::tuner {
namespace {

// A bowl in index space, minimum 10 at `optimum`, with a coupling term.
double Bowl(const Point& point, const Point& optimum) {
  double cost = 10;
  for (size_t i = 0; i < point.size(); ++i) {
    const double d = static_cast<double>(point[i]) - static_cast<double>(optimum[i]);
    cost += 2.0 * d * d;
  }
  if (point.size() >= 2) {
    cost += 0.5 * (static_cast<double>(point[0]) - static_cast<double>(optimum[0])) *
            (static_cast<double>(point[1]) - static_cast<double>(optimum[1]));
  }
  return cost;
}

struct Recorder {
  std::vector<Point> visited;
  std::optional<double> best;
  EvaluateFn Fn(std::function<std::optional<double>(const Point&)> cost) {
    return [this, cost](const Point& point) -> Result<std::optional<double>> {
      visited.push_back(point);
      std::optional<double> value = cost(point);
      if (value && (!best || *value < *best)) best = value;
      return value;
    };
  }
};

TEST(GridStrategy, VisitsEveryPointOnceRowMajor) {
  Recorder recorder;
  auto grid = MakeGridStrategy({2, 3});
  EXPECT_EQ(grid->EstimatedTrials(), 6u);
  ASSERT_TRUE(grid->Search(recorder.Fn([](const Point&) { return 1.0; })).ok());
  EXPECT_EQ(recorder.visited, (std::vector<Point>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
}

TEST(GridStrategy, EvaluateErrorStopsTheSearch) {
  auto grid = MakeGridStrategy({3, 3});
  int calls = 0;
  Status status = grid->Search([&](const Point&) -> Result<std::optional<double>> {
    if (++calls == 4) return Status::IoError("store full");
    return std::optional<double>(1.0);
  });
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_EQ(calls, 4);
}

TEST(AdaptiveStrategy, FindsTheOptimumOfABowlWithFewTrials) {
  const std::vector<size_t> sizes = {11, 9};
  for (const Point& optimum : std::vector<Point>{{0, 0}, {10, 8}, {3, 6}, {7, 1}, {5, 4}}) {
    Recorder recorder;
    auto adaptive = MakeAdaptiveStrategy(sizes, {5, 4});
    ASSERT_TRUE(
        adaptive->Search(recorder.Fn([&](const Point& p) { return Bowl(p, optimum); })).ok());
    ASSERT_TRUE(recorder.best.has_value());
    EXPECT_DOUBLE_EQ(*recorder.best, 10.0) << "optimum " << optimum[0] << "," << optimum[1];
    EXPECT_LE(recorder.visited.size(), 99u * 30 / 100) << "optimum " << optimum[0];
    std::set<Point> distinct(recorder.visited.begin(), recorder.visited.end());
    EXPECT_EQ(distinct.size(), recorder.visited.size()) << "a point was measured twice";
  }
}

TEST(AdaptiveStrategy, FailedPointsNeverWinAndTheSearchGoesOn) {
  // Everything with index 0 on the first axis "corrupts data" although its cost
  // would be lowest; the search must settle on the best valid point.
  Recorder recorder;
  auto adaptive = MakeAdaptiveStrategy({6, 6}, {3, 3});
  ASSERT_TRUE(adaptive
                  ->Search(recorder.Fn([](const Point& p) -> std::optional<double> {
                    if (p[0] == 0) return std::nullopt;
                    return Bowl(p, {0, 2});
                  }))
                  .ok());
  ASSERT_TRUE(recorder.best.has_value());
  EXPECT_DOUBLE_EQ(*recorder.best, Bowl({1, 2}, {0, 2}));
}

TEST(AdaptiveStrategy, SameCostsSamePath) {
  auto run = [] {
    Recorder recorder;
    auto adaptive = MakeAdaptiveStrategy({11, 9}, {5, 4});
    EXPECT_TRUE(adaptive->Search(recorder.Fn([](const Point& p) { return Bowl(p, {2, 7}); })).ok());
    return recorder.visited;
  };
  EXPECT_EQ(run(), run());
}

TEST(AdaptiveStrategy, OneAxisAndSinglePointSpaces) {
  Recorder line;
  ASSERT_TRUE(MakeAdaptiveStrategy({16}, {8})
                  ->Search(line.Fn([](const Point& p) { return Bowl(p, {13}); }))
                  .ok());
  EXPECT_DOUBLE_EQ(*line.best, 10.0);
  Recorder single;
  ASSERT_TRUE(MakeAdaptiveStrategy({1, 1}, {0, 0})
                  ->Search(single.Fn([](const Point&) { return 3.0; }))
                  .ok());
  EXPECT_EQ(single.visited.size(), 1u);
}

TEST(AbStrategy, MeasuresTheStartAndItsOppositeCorner) {
  Recorder recorder;
  auto ab = MakeStrategy("ab", {2, 2, 2}, {0, 1, 0});
  ASSERT_TRUE(ab.ok());
  EXPECT_EQ((*ab)->EstimatedTrials(), 2u);
  ASSERT_TRUE((*ab)->Search(recorder.Fn([](const Point&) { return 1.0; })).ok());
  EXPECT_EQ(recorder.visited, (std::vector<Point>{{0, 1, 0}, {1, 0, 1}}));
}

TEST(AbStrategy, OneValueEverywhereIsOnlyTheStart) {
  Recorder recorder;
  auto ab = MakeAbStrategy({1, 1}, {0, 0});
  ASSERT_TRUE(ab->Search(recorder.Fn([](const Point&) { return 1.0; })).ok());
  EXPECT_EQ(recorder.visited, (std::vector<Point>{{0, 0}}));
}

TEST(MakeStrategy, UnknownNameIsRefused) {
  auto made = MakeStrategy("annealing", {2}, {0});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("grid, adaptive"), std::string::npos);
}

}  // namespace
}  // namespace artune::tuner
