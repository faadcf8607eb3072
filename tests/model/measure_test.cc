// How `artune model measure` (measure.h) keeps the calls of several slices to its
// budget: the plan's anchors always, the x4 steps between them only on schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "artune/model/measure.h"
#include "artune/transport/knobs.h"

namespace artune::model {
namespace {

using transport::Protocol;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

using Planned = std::vector<std::pair<uint64_t, uint32_t>>;

// The default measure spent 53-57 s per link at load 18-20 (30 s is the goal) once
// the calls of several slices were planned at x4 sizes: a round behind its schedule
// keeps to the coarse ladder and the cap, the sizes whose factor the model would
// otherwise hold from far below (the 1MiB slices' from 256KiB).
TEST(SeveralSliceAnchors, AreTheCoarseLadderAndEachCountsLargestCall) {
  const MeasureOptions options;  // 2 and 8 slices, 16MiB per call, coarse x16
  EXPECT_EQ(SeveralSliceAnchors(Protocol::kRendezvousRead, 64, 10 * kMiB, options),
            (Planned{{64, 2},
                     {1 * kKiB, 2},
                     {16 * kKiB, 2},
                     {256 * kKiB, 2},
                     {4 * kMiB, 2},
                     {8 * kMiB, 2},  // 16MiB / 2
                     {64, 8},
                     {1 * kKiB, 8},
                     {16 * kKiB, 8},
                     {256 * kKiB, 8},
                     {2 * kMiB, 8}}));  // 16MiB / 8
  // 512KiB chunks: slices from 1MiB; only 4MiB x 2 lies between the anchors.
  EXPECT_EQ(SeveralSliceAnchors(Protocol::kChunkedRendezvous, 1 * kMiB, 10 * kMiB, options),
            (Planned{{1 * kMiB, 2}, {8 * kMiB, 2}, {1 * kMiB, 8}, {2 * kMiB, 8}}));
  const Planned read = SeveralSlicePoints(Protocol::kRendezvousRead, 64, 10 * kMiB, options);
  for (const auto& anchor : SeveralSliceAnchors(Protocol::kRendezvousRead, 64, 10 * kMiB, options))
    EXPECT_NE(std::find(read.begin(), read.end(), anchor), read.end());
  EXPECT_TRUE(SeveralSliceAnchors(Protocol::kEager, 64, kMiB, options).empty());
}

// The sizes of the rendezvous read's calls of 8 slices a measure stored.
std::set<uint64_t> ReadSizesOfEightSlices(const MeasureReport& report) {
  std::set<uint64_t> sizes;
  for (const ModelPoint& point : report.model.points) {
    if (point.protocol == Protocol::kRendezvousRead && point.slices == 8) sizes.insert(point.size);
  }
  return sizes;
}

// A loopback tcp measure of small slices (64B..64KiB, 512KiB per call): a budget
// that is gone from the start measures the anchors only, an ample one every x4 step.
TEST(MeasureLinkModel, MeasuresTheStepsBetweenTheAnchorsOnlyOnSchedule) {
  MeasureOptions options;
  ASSERT_TRUE(transport::SetKnob(options.base, "fabric", "tcp").ok());
  options.pollings = {transport::PollingMode::kAdaptive};
  options.inflights = {1};
  options.chunk_sizes.clear();
  options.slice_counts = {8};
  options.max_size = 64 * kKiB;
  options.max_call_bytes = 512 * kKiB;

  options.budget_s = 1e-6;  // behind its schedule at the first group
  auto behind = MeasureLinkModel(options, nullptr);
  ASSERT_TRUE(behind.ok()) << behind.status().ToString();
  EXPECT_EQ(ReadSizesOfEightSlices(*behind),
            (std::set<uint64_t>{64, 1 * kKiB, 16 * kKiB, 64 * kKiB}));

  options.budget_s = 3600;  // on schedule whatever the host's load
  auto ample = MeasureLinkModel(options, nullptr);
  ASSERT_TRUE(ample.ok()) << ample.status().ToString();
  EXPECT_EQ(ReadSizesOfEightSlices(*ample),
            (std::set<uint64_t>{64, 256, 1 * kKiB, 4 * kKiB, 16 * kKiB, 64 * kKiB}));
}

}  // namespace
}  // namespace artune::model
