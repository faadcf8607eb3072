// The link model's lookups and the prediction's costing over synthetic models
// whose answers are known by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "artune/model/link_model.h"
#include "artune/model/measure.h"
#include "artune/model/predict.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/payload.h"

namespace artune::model {
namespace {

using transport::PollingMode;
using transport::Protocol;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// time = fixed + size / bandwidth, at sizes 64B..8MiB (x4), at 1 and 8 calls in
// flight (8 deep: a quarter of the fixed cost, the same bandwidth).
void AddCurve(LinkModel& model, Protocol protocol, PollingMode polling, double fixed_s,
              double bytes_per_s, uint64_t chunk = 0, uint32_t depth = 0, uint64_t first = 64) {
  for (uint64_t size = first; size <= 8 * kMiB; size *= 4) {
    for (uint32_t inflight : {1u, 8u}) {
      ModelPoint point;
      point.protocol = protocol;
      point.polling = polling;
      point.chunk_size = chunk;
      point.pipeline_depth = depth;
      point.size = size;
      point.inflight = inflight;
      point.median_s = (inflight == 1 ? fixed_s : fixed_s / 4) + size / bytes_per_s;
      point.low_s = point.high_s = point.median_s;
      point.rounds = 3;
      model.points.push_back(point);
    }
  }
}

// Eager: 10 us + 1 GB/s; rendezvous read: 30 us + 4 GB/s; chunked at depth 4:
// 40 us + 2 GB/s with 64KiB chunks, 40 us + 8 GB/s with 1MiB; coalesced as eager.
LinkModel SyntheticModel() {
  LinkModel model;
  model.id = 7;
  model.fabric = "tcp";
  for (PollingMode polling : {PollingMode::kAdaptive, PollingMode::kBusy}) {
    const double scale = polling == PollingMode::kBusy ? 0.5 : 1.0;  // busy: half the fixed cost
    AddCurve(model, Protocol::kEager, polling, 10e-6 * scale, 1e9);
    AddCurve(model, Protocol::kCoalescedEager, polling, 10e-6 * scale, 1e9, 0, 0, 512);
    AddCurve(model, Protocol::kRendezvousRead, polling, 30e-6 * scale, 4e9);
    AddCurve(model, Protocol::kChunkedRendezvous, polling, 40e-6 * scale, 2e9, 64 * kKiB, 4,
             128 * kKiB);
    AddCurve(model, Protocol::kChunkedRendezvous, polling, 40e-6 * scale, 8e9, 1 * kMiB, 4,
             2 * kMiB);
  }
  return model;
}

tuner::Workload MessagesOf(const std::vector<std::vector<uint64_t>>& layouts) {
  tuner::Workload workload;
  workload.description = "synthetic";
  for (size_t i = 0; i < layouts.size(); ++i) {
    auto payload = tuner::GeneratePayloadFromSizes(layouts[i], i + 1);
    EXPECT_TRUE(payload.ok()) << payload.status().ToString();
    workload.total_bytes += payload->total_bytes();
    workload.messages.push_back(std::move(*payload));
  }
  return workload;
}

TEST(InterpolateLogLog, ExactOnPowerLawsAndHeldOutside) {
  const std::vector<std::pair<double, double>> linear = {{1024, 1e-6}, {4096, 4e-6}};
  EXPECT_NEAR(InterpolateLogLog(linear, 2048), 2e-6, 1e-12);
  const std::vector<std::pair<double, double>> flat = {{64, 5e-6}, {1024, 5e-6}};
  EXPECT_NEAR(InterpolateLogLog(flat, 300), 5e-6, 1e-12);
  EXPECT_DOUBLE_EQ(InterpolateLogLog(linear, 10), 1e-6);   // below: the first value
  EXPECT_DOUBLE_EQ(InterpolateLogLog(linear, 1e9), 4e-6);  // above: the last
}

TEST(LinkModelUnitCost, MeasuredPointsComeBackAndInflightInterpolates) {
  const LinkModel model = SyntheticModel();
  auto at_point = model.UnitCost(Protocol::kEager, PollingMode::kAdaptive, 4 * kKiB, 1);
  ASSERT_TRUE(at_point.ok());
  EXPECT_NEAR(*at_point, 10e-6 + 4096 / 1e9, 1e-12);
  auto eight = model.UnitCost(Protocol::kEager, PollingMode::kAdaptive, 4 * kKiB, 8);
  ASSERT_TRUE(eight.ok());
  EXPECT_NEAR(*eight, 2.5e-6 + 4096 / 1e9, 1e-12);
  // Between 1 and 8 calls in flight: between the two, log-log.
  auto two = model.UnitCost(Protocol::kEager, PollingMode::kAdaptive, 4 * kKiB, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_LT(*two, *at_point);
  EXPECT_GT(*two, *eight);
}

TEST(LinkModelUnitCost, ChunkedJoinsTheReadOfOneChunkAndInterpolatesChunkSizes) {
  const LinkModel model = SyntheticModel();
  // At or under one chunk a chunked transfer is a read.
  auto one_chunk = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 64 * kKiB,
                                  1, 64 * kKiB, 4);
  auto read = model.UnitCost(Protocol::kRendezvousRead, PollingMode::kAdaptive, 64 * kKiB, 1);
  ASSERT_TRUE(one_chunk.ok() && read.ok());
  EXPECT_DOUBLE_EQ(*one_chunk, *read);
  // A measured (chunk, depth) curve's own point.
  auto measured = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 2 * kMiB, 1,
                                 64 * kKiB, 4);
  ASSERT_TRUE(measured.ok());
  EXPECT_NEAR(*measured, 40e-6 + 2.0 * kMiB / 2e9, 1e-12);
  // 256KiB chunks (unmeasured) lie between the 64KiB and 1MiB curves at 2MiB.
  auto low = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 2 * kMiB, 1,
                            64 * kKiB, 4);
  auto high = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 2 * kMiB, 1,
                             1 * kMiB, 4);
  auto middle = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 2 * kMiB, 1,
                               256 * kKiB, 4);
  ASSERT_TRUE(low.ok() && high.ok() && middle.ok());
  EXPECT_GE(*middle, std::min(*low, *high));
  EXPECT_LE(*middle, std::max(*low, *high));
}

TEST(LinkModelUnitCost, ADepthPastTheMeasuredOnesTakesTheDeepestMeasured) {
  // 64KiB chunks measured at depths 4 and 16, 1MiB chunks at depth 4 only (an
  // 8MiB slice has 8 of them: deeper reads them no faster; the measurement skips it).
  LinkModel model = SyntheticModel();
  AddCurve(model, Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 40e-6, 3e9, 64 * kKiB, 16,
           128 * kKiB);
  auto deep = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 8 * kMiB, 1,
                             1 * kMiB, 16);
  auto measured = model.UnitCost(Protocol::kChunkedRendezvous, PollingMode::kAdaptive, 8 * kMiB, 1,
                                 1 * kMiB, 4);
  ASSERT_TRUE(deep.ok() && measured.ok());
  EXPECT_NEAR(*measured, 40e-6 + 8.0 * kMiB / 8e9, 1e-12);
  EXPECT_DOUBLE_EQ(*deep, *measured);  // not the read of the whole slice
}

TEST(LinkModelUnitCost, APointCostlierThanALargerOneIsABurstAndLowered) {
  // Eager at 10 us + 1 GB/s, but the 4KiB point caught a burst of load: 100 us.
  LinkModel model = SyntheticModel();
  for (ModelPoint& point : model.points) {
    if (point.protocol == Protocol::kEager && point.size == 4 * kKiB && point.inflight == 1) {
      point.median_s = 100e-6;
    }
  }
  auto burst = model.UnitCost(Protocol::kEager, PollingMode::kAdaptive, 4 * kKiB, 1);
  auto larger = model.UnitCost(Protocol::kEager, PollingMode::kAdaptive, 16 * kKiB, 1);
  ASSERT_TRUE(burst.ok() && larger.ok());
  EXPECT_NEAR(*larger, 10e-6 + 16384 / 1e9, 1e-12);
  EXPECT_DOUBLE_EQ(*burst, *larger);  // not 100 us
  // Points that rise with the size are kept as measured.
  auto below = model.UnitCost(Protocol::kEager, PollingMode::kAdaptive, 1 * kKiB, 1);
  ASSERT_TRUE(below.ok());
  EXPECT_NEAR(*below, 10e-6 + 1024 / 1e9, 1e-12);
}

TEST(LinkModelUnitCost, MissingPollingModeIsNotFoundAndSaysWhatThereIs) {
  const LinkModel model = SyntheticModel();
  auto cost = model.UnitCost(Protocol::kEager, PollingMode::kEvent, 64, 1);
  ASSERT_FALSE(cost.ok());
  EXPECT_EQ(cost.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(cost.status().message().find("eager/adaptive"), std::string::npos);
}

TEST(CostPass, SumsUnitsAndChargesTheCallOnce) {
  const LinkModel model = SyntheticModel();
  transport::Config config;  // eager_threshold 16KiB, chunk 512KiB, coalesce 16KiB
  config.polling = PollingMode::kAdaptive;
  // One message of one 4KiB slice (eager), one of one 256KiB slice (read).
  const tuner::Workload workload = MessagesOf({{4 * kKiB}, {256 * kKiB}});
  auto pass = CostPass(model, workload, config, 1);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  const double eager = 10e-6 + 4096 / 1e9;
  const double read = 30e-6 + 256.0 * kKiB / 4e9;
  EXPECT_NEAR(pass->seconds, eager + read, 1e-9);
  // The base (the smallest eager call) once per message, the rest by bucket.
  const double base = 10e-6 + 64 / 1e9;
  EXPECT_NEAR(pass->terms.at(kBaseTerm).seconds, 2 * base, 1e-12);
  EXPECT_EQ(
      pass->terms.at(transport::Log2Bucket(256 * kKiB)).protocols.count(Protocol::kRendezvousRead),
      1u);
  // Two slices in one message: the call's fixed cost is paid once.
  const tuner::Workload two = MessagesOf({{4 * kKiB, 256 * kKiB}});
  auto together = CostPass(model, two, config, 1);
  ASSERT_TRUE(together.ok());
  EXPECT_NEAR(together->seconds, eager + read - base, 1e-9);
}

TEST(CostPass, CoalescedSlicesAreOnePacket) {
  const LinkModel model = SyntheticModel();
  transport::Config config;
  config.polling = PollingMode::kAdaptive;
  config.coalesce_limit = 16 * kKiB;
  const tuner::Workload workload = MessagesOf({{1 * kKiB, 1 * kKiB}});
  auto pass = CostPass(model, workload, config, 1);
  ASSERT_TRUE(pass.ok());
  // One coalesced packet of 2KiB.
  EXPECT_NEAR(pass->seconds, 10e-6 + 2048 / 1e9, 1e-9);
  EXPECT_EQ(
      pass->terms.at(transport::Log2Bucket(2 * kKiB)).protocols.count(Protocol::kCoalescedEager),
      1u);
  config.coalesce_limit = 0;  // two eager packets: two increments over the base
  auto apart = CostPass(model, workload, config, 1);
  ASSERT_TRUE(apart.ok());
  const double base = 10e-6 + 64 / 1e9;
  EXPECT_NEAR(apart->seconds, base + 2 * (10e-6 + 1024 / 1e9 - base), 1e-9);
}

// SyntheticModel plus calls of 4 rendezvous-read slices under adaptive polling,
// one call in flight: each slice adds twice what it adds alone.
LinkModel ModelWithSeveralSlices() {
  LinkModel model = SyntheticModel();
  const double base = 10e-6 + 64 / 1e9;  // the smallest eager call (64 B, held below)
  for (uint64_t size = 64; size <= 8 * kMiB; size *= 4) {
    ModelPoint point;
    point.protocol = Protocol::kRendezvousRead;
    point.polling = PollingMode::kAdaptive;
    point.size = size;
    point.inflight = 1;
    point.slices = 4;
    point.median_s = base + 4 * 2 * (30e-6 + size / 4e9 - base);
    point.low_s = point.high_s = point.median_s;
    point.rounds = 2;
    model.points.push_back(point);
  }
  return model;
}

TEST(LinkModelSlicesFactor, RatioOfTheMeasuredCallsInterpolatedOverTheSliceCount) {
  const LinkModel model = ModelWithSeveralSlices();
  const auto factor = [&](uint32_t slices) {
    return model.SlicesFactor(Protocol::kRendezvousRead, PollingMode::kAdaptive, 1 * kMiB, slices);
  };
  EXPECT_DOUBLE_EQ(factor(1), 1);
  EXPECT_NEAR(factor(4), 2, 1e-9);
  EXPECT_NEAR(factor(2), std::sqrt(2.0), 1e-9);  // log-log between (1, 1) and (4, 2)
  EXPECT_NEAR(factor(8), 2, 1e-9);               // held past the largest count
  // Calls of 4 slices measured up to 256KiB only: at 1MiB the factor is held, not
  // the 256KiB call's cost (that would make the 1MiB slices cheaper together).
  LinkModel short_range = model;
  std::erase_if(short_range.points, [](const ModelPoint& point) {
    return point.slices > 1 && point.size > 256 * kKiB;
  });
  EXPECT_NEAR(
      short_range.SlicesFactor(Protocol::kRendezvousRead, PollingMode::kAdaptive, 1 * kMiB, 4), 2,
      1e-9);
  // No points of several slices: busy polling, eager, an older model.
  EXPECT_DOUBLE_EQ(model.SlicesFactor(Protocol::kRendezvousRead, PollingMode::kBusy, 1 * kMiB, 4),
                   1);
  EXPECT_DOUBLE_EQ(model.SlicesFactor(Protocol::kEager, PollingMode::kAdaptive, 1 * kKiB, 4), 1);
  EXPECT_DOUBLE_EQ(
      SyntheticModel().SlicesFactor(Protocol::kRendezvousRead, PollingMode::kAdaptive, 1 * kMiB, 4),
      1);
}

// The old costing summed each slice's single-slice cost (factor 1): 4 x 1MiB came
// out at base + 4 * (read - base) instead of the measured base + 8 * (read - base).
TEST(CostPass, RendezvousSlicesOfOneCallCostWhatCallsOfSeveralMeasured) {
  const LinkModel model = ModelWithSeveralSlices();
  transport::Config config;
  config.polling = PollingMode::kAdaptive;
  config.chunk_size = 8 * kMiB;  // every 1MiB slice one read
  const double base = 10e-6 + 64 / 1e9;
  const double read = 30e-6 + 1.0 * kMiB / 4e9;
  auto four = CostPass(model, MessagesOf({{kMiB, kMiB, kMiB, kMiB}}), config, 1);
  ASSERT_TRUE(four.ok()) << four.status().ToString();
  EXPECT_NEAR(four->seconds, base + 4 * 2 * (read - base), 1e-9);
  auto two = CostPass(model, MessagesOf({{kMiB, kMiB}}), config, 1);
  ASSERT_TRUE(two.ok());
  EXPECT_NEAR(two->seconds, base + 2 * std::sqrt(2.0) * (read - base), 1e-9);
  // One slice per call, and eager slices beside one read, as before.
  auto one = CostPass(model, MessagesOf({{kMiB}, {kMiB}}), config, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR(one->seconds, 2 * read, 1e-9);
  auto mixed = CostPass(model, MessagesOf({{4 * kKiB, 4 * kKiB, kMiB}}), config, 1);
  ASSERT_TRUE(mixed.ok());
  EXPECT_NEAR(mixed->seconds, read + (10e-6 + 8192 / 1e9 - base), 1e-9);
}

TEST(Predict, PicksTheThresholdThatPutsSlicesOnTheCheaperProtocolAndSaysWhy) {
  const LinkModel model = SyntheticModel();
  // 32KiB slices: eager costs 10 us + 32.8 us = 42.8 us, a read 30 us + 8.2 us = 38.2 us.
  // 4MiB slices: a read 30 + 1049 us, chunked at 1MiB 40 + 524 us.
  const tuner::Workload workload = MessagesOf({{32 * kKiB}, {32 * kKiB}, {4 * kMiB}, {32 * kKiB}});
  auto space = tuner::ParseSearchSpace(
      std::vector<std::string>{"eager_threshold=16KiB,64KiB", "chunk_size=1MiB,8MiB"});
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  transport::Config base;
  base.polling = PollingMode::kAdaptive;
  auto prediction = Predict(model, workload, *space, base, 1);
  ASSERT_TRUE(prediction.ok()) << prediction.status().ToString();
  ASSERT_EQ(prediction->ranked.size(), 4u);
  EXPECT_EQ(prediction->best().knobs.at("eager_threshold"), "16KiB");
  EXPECT_EQ(prediction->best().knobs.at("chunk_size"), "1MiB");
  EXPECT_EQ(prediction->ranked.back().knobs.at("eager_threshold"), "64KiB");
  EXPECT_EQ(prediction->ranked.back().knobs.at("chunk_size"), "8MiB");
  // The default (16KiB, 512KiB chunks) cuts the 4MiB slice at 512KiB: measured
  // curves at 64KiB and 1MiB, so the cost lies between theirs.
  EXPECT_EQ(prediction->default_config.knobs.at("chunk_size"), "512KiB");
  // 32KiB and 4MiB lie between measured sizes: log-log interpolation of a line
  // overestimates a little (under 5 % here).
  const double best = 3 * (30e-6 + 32.0 * kKiB / 4e9) + (40e-6 + 4.0 * kMiB / 8e9);
  EXPECT_NEAR(prediction->best().cost.seconds, best, 0.05 * best);
  EXPECT_GT(prediction->margin, 0);
  ASSERT_FALSE(prediction->deciding.empty());
  for (const DecidingTerm& term : prediction->deciding) {
    EXPECT_FALSE(term.text.empty());
  }
}

TEST(Predict, DecidingTermNamesTheBucketsAndTheProtocols) {
  const LinkModel model = SyntheticModel();
  const tuner::Workload workload = MessagesOf({{4 * kMiB}, {4 * kMiB}});
  auto space = tuner::ParseSearchSpace(std::vector<std::string>{"chunk_size=1MiB,8MiB"});
  ASSERT_TRUE(space.ok());
  transport::Config base;
  base.polling = PollingMode::kAdaptive;
  auto prediction = Predict(model, workload, *space, base, 1);
  ASSERT_TRUE(prediction.ok());
  EXPECT_EQ(prediction->best().knobs.at("chunk_size"), "1MiB");
  ASSERT_FALSE(prediction->deciding.empty());
  const DecidingTerm& top = prediction->deciding.front();
  EXPECT_EQ(top.best_protocols, "chunked-rendezvous");
  EXPECT_NE(top.text.find("the 4MiB-8MiB slices: chunked-rendezvous at 1MiB chunks"),
            std::string::npos)
      << top.text;
  EXPECT_GT(top.saving_s, 0);
}

TEST(Predict, PollingAxisUsesEachModesCurves) {
  const LinkModel model = SyntheticModel();
  const tuner::Workload workload = MessagesOf({{256}, {256}});
  auto space = tuner::ParseSearchSpace(std::vector<std::string>{"polling=busy,adaptive"});
  ASSERT_TRUE(space.ok());
  auto prediction = Predict(model, workload, *space, transport::Config{}, 1);
  ASSERT_TRUE(prediction.ok()) << prediction.status().ToString();
  EXPECT_EQ(prediction->best().knobs.at("polling"), "busy");
  EXPECT_NEAR(prediction->margin, 0.5, 0.05);  // busy: half the fixed cost
}

TEST(ModelRecord, RoundTripsThroughTheStoreRows) {
  const LinkModel model = SyntheticModel();
  const db::LinkModelRecord record = ToRecord(model, 3, 12.5);
  EXPECT_EQ(record.points.size(), model.points.size());
  auto back = FromRecord(record);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->points.size(), model.points.size());
  EXPECT_EQ(back->points[5].protocol, model.points[5].protocol);
  EXPECT_DOUBLE_EQ(back->points[5].median_s, model.points[5].median_s);
  EXPECT_EQ(back->points[5].slices, 1u);
  const LinkModel several = ModelWithSeveralSlices();
  auto several_back = FromRecord(ToRecord(several, 1, 1));
  ASSERT_TRUE(several_back.ok());
  EXPECT_EQ(several_back->points.back().slices, 4u);
  db::LinkModelRecord bad = record;
  bad.points[0].protocol = "teleport";
  EXPECT_EQ(FromRecord(bad).status().code(), ErrorCode::kCorruption);
}

TEST(MeasureOptions, RefusesWhatCannotBeMeasured) {
  MeasureOptions options;
  EXPECT_TRUE(ValidateMeasureOptions(options).ok());
  options.max_size = 64 * kMiB;  // a payload slice is at most 10 MiB
  EXPECT_FALSE(ValidateMeasureOptions(options).ok());
  options = MeasureOptions{};
  options.pollings.clear();
  EXPECT_FALSE(ValidateMeasureOptions(options).ok());
  options = MeasureOptions{};
  options.min_rounds = 2;  // above rounds
  EXPECT_FALSE(ValidateMeasureOptions(options).ok());
  options = MeasureOptions{};
  options.coarse_factor = 12;  // not a power of two
  EXPECT_FALSE(ValidateMeasureOptions(options).ok());
  options = MeasureOptions{};
  options.slice_counts = {1, 8};  // one slice per call is always measured
  EXPECT_FALSE(ValidateMeasureOptions(options).ok());
  options = MeasureOptions{};
  options.stability.agreeing = 0;
  EXPECT_FALSE(ValidateMeasureOptions(options).ok());
  EXPECT_EQ(CallsFor(8 * kMiB, 8), 8u);  // the window filled at least
  EXPECT_EQ(CallsFor(64, 1), 16u);       // at most 16
}

// A rendezvous read's calls of 8 slices used to stop at 256KiB per slice (the x16
// ladder's last size under the 16MiB cap), and the factor measured there (8 reads
// of 256KiB cost their sum on loopback tcp) was held for 1MiB slices, whose calls
// of several cost 2-3x their sum, while the 512KiB-chunked group (its ladder from
// 1MiB) had its own factor at 1MiB: the model put a skew message's six 1MiB reads
// 43 % under the default's chunked ones, where they measured 0-10 % under.
TEST(SeveralSlicePoints, StepByFourAndReachTheLargestSliceUnderTheCap) {
  const MeasureOptions options;  // 2 and 8 slices, 16MiB per call
  using Planned = std::vector<std::pair<uint64_t, uint32_t>>;
  const Planned read = SeveralSlicePoints(Protocol::kRendezvousRead, 64, 10 * kMiB, options);
  auto has = [&](uint64_t size, uint32_t slices) {
    return std::find(read.begin(), read.end(), std::pair(size, slices)) != read.end();
  };
  EXPECT_TRUE(has(256 * kKiB, 8));
  EXPECT_TRUE(has(1 * kMiB, 8));  // where the skew message's slices are
  EXPECT_TRUE(has(2 * kMiB, 8));  // 16MiB / 8
  EXPECT_FALSE(has(4 * kMiB, 8));
  EXPECT_TRUE(has(1 * kMiB, 2));
  EXPECT_TRUE(has(4 * kMiB, 2));
  EXPECT_TRUE(has(8 * kMiB, 2));  // 16MiB / 2
  EXPECT_EQ(read.size(), 19u);    // 64B..4MiB x4 and 8MiB; 64B..1MiB and 2MiB
  for (const auto& [size, slices] : read) EXPECT_LE(size * slices, options.max_call_bytes);
  // 512KiB chunks (slices from 1MiB) at the same 1MiB; 4MiB chunks (slices from
  // 8MiB): a call of two 8MiB slices is the cap itself, none of 8 fits.
  EXPECT_EQ(SeveralSlicePoints(Protocol::kChunkedRendezvous, 1 * kMiB, 10 * kMiB, options),
            (Planned{{1 * kMiB, 2}, {4 * kMiB, 2}, {8 * kMiB, 2}, {1 * kMiB, 8}, {2 * kMiB, 8}}));
  EXPECT_EQ(SeveralSlicePoints(Protocol::kChunkedRendezvous, 8 * kMiB, 10 * kMiB, options),
            (Planned{{8 * kMiB, 2}}));
  EXPECT_TRUE(SeveralSlicePoints(Protocol::kEager, 64, kMiB, options).empty());
}

}  // namespace
}  // namespace artune::model
