// `artune watch`'s decisions, driven through a fake link: the traffic, the config in
// force and the A/B's outcomes are the test's, the prediction is the real one over a
// synthetic link model whose answers are known by hand.
#include "artune/watch/watcher.h"

#include <gtest/gtest.h>

#include <deque>

#include "../synthetic_link_model.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/stats.h"

namespace artune::watch {
namespace {

using transport::PollingMode;
using transport::Protocol;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// Eager 10 us + 1 GB/s, a rendezvous read 60 us + 4 GB/s: eager is cheaper up to
// about 65 KiB, so 24 KiB messages want an eager threshold above the default 16 KiB
// (a pass about 45 % shorter).
model::LinkModel SyntheticModel() {
  model::LinkModel model;
  model.fabric = "tcp";
  // 64 B..8 MiB at 1 and 8 calls in flight, 3 rounds.
  const model::SyntheticCurve kCurve = {.rounds = 3, .inflights = {1, 8}};
  model::AddSyntheticCurve(model, Protocol::kEager, 10e-6, 1e9, kCurve);
  model::AddSyntheticCurve(model, Protocol::kCoalescedEager, 10e-6, 1e9, kCurve);
  model::AddSyntheticCurve(model, Protocol::kRendezvousRead, 60e-6, 4e9, kCurve);
  model::AddSyntheticCurve(model, Protocol::kChunkedRendezvous, 70e-6, 4e9,
                           {.chunk = 512 * kKiB, .depth = 4, .rounds = 3, .inflights = {1, 8}});
  return model;
}

tuner::PairedCompareResult Measured(std::vector<double> speedups) {
  tuner::PairedCompareResult result;
  result.paired_speedups = std::move(speedups);
  result.verdict = tuner::JudgePairedSpeedups(result.paired_speedups);
  return result;
}
const std::vector<double> kFaster(6, 1.3),
    kSlower(6, 0.7), kNoise = {0.9, 1.1, 0.95, 1.05, 1.0, 1.02};

class FakeLink final : public WatchedLink {
 public:
  void Carry(uint64_t size, uint64_t messages) {
    transport::ProtocolStats& eager = counters.by_protocol[static_cast<int>(Protocol::kEager)];
    eager.slices += messages;
    eager.slices_by_bucket[transport::Log2Bucket(size)] += messages;
  }
  Result<transport::Stats> ReadCounters() override { return counters; }
  Result<transport::Config> ConfigInForce() override { return in_force; }
  Status Push(const transport::Config& config) override {
    pushed.push_back(config);
    in_force = config;
    return Status::Ok();
  }
  Result<tuner::PairedCompareResult> Compare(const transport::Config& baseline,
                                             const transport::Config& tuned,
                                             const tuner::Workload&) override {
    compared.emplace_back(baseline, tuned);
    if (outcomes.empty()) return Status::Internal("the test scripted no more A/B outcomes");
    tuner::PairedCompareResult result = Measured(outcomes.front());
    outcomes.pop_front();
    return result;
  }

  transport::Stats counters;
  transport::Config in_force;
  std::vector<transport::Config> pushed;
  std::vector<std::pair<transport::Config, transport::Config>> compared;
  std::deque<std::vector<double>> outcomes;
};

class WatcherTest : public ::testing::Test {
 protected:
  WatcherTest() {
    options_.policy.min_window_messages = 100;
    options_.policy.min_gap = std::chrono::seconds(0);
    const std::vector<std::string> axes = {"eager_threshold=4KiB..64KiB:x2"};
    options_.space = tuner::ParseSearchSpace(axes).value();
    options_.servers_text = "127.0.0.1:1";
  }

  // Carries `messages` of `size` bytes, then steps once.
  std::optional<db::WatchEventRecord> StepAfter(Watcher& watcher, uint64_t size,
                                                uint64_t messages) {
    link_.Carry(size, messages);
    now_ += std::chrono::seconds(5);
    auto step = watcher.Step(now_);
    EXPECT_TRUE(step.ok()) << step.status().ToString();
    return step.ok() ? *step : std::nullopt;
  }

  FakeLink link_;
  WatcherOptions options_;
  WatchClock::time_point now_ = WatchClock::time_point{} + std::chrono::hours(1);
};

TEST_F(WatcherTest, TheFirstFullWindowIsTheReferenceAndASteadyMixDecidesNothing) {
  Watcher watcher(link_, SyntheticModel(), options_);
  EXPECT_FALSE(StepAfter(watcher, 1000, 0));   // the first reading starts the window
  EXPECT_FALSE(StepAfter(watcher, 1000, 60));  // under 100 messages: keep reading
  const auto baseline = StepAfter(watcher, 1000, 60);
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->action, db::WatchAction::kBaseline);
  EXPECT_EQ(baseline->window_slices, 120u);
  EXPECT_EQ(baseline->in_force_knobs, "eager_threshold=16KiB");
  EXPECT_FALSE(StepAfter(watcher, 1000, 150));  // the same mix
  EXPECT_TRUE(link_.compared.empty());
  EXPECT_TRUE(link_.pushed.empty());
}

// 24 KiB messages go by rendezvous reads under the default 16 KiB threshold; the
// model says eager is cheaper there. Measured faster, the change is pushed; the
// next window re-checks it and, measured slower than before, rolls it back.
TEST_F(WatcherTest, ADriftMeasuredFasterIsPushedThenRolledBackWhenTheRecheckIsSlower) {
  Watcher watcher(link_, SyntheticModel(), options_);
  StepAfter(watcher, 1000, 0);
  ASSERT_TRUE(StepAfter(watcher, 1000, 200));  // baseline
  link_.outcomes = {kFaster, kSlower};
  const auto pushed = StepAfter(watcher, 24 * kKiB, 200);
  ASSERT_TRUE(pushed);
  EXPECT_EQ(pushed->action, db::WatchAction::kPush) << pushed->reason;
  EXPECT_GT(pushed->drift, 0.9);
  EXPECT_GT(pushed->predicted_margin, 0.05);
  EXPECT_EQ(pushed->verdict, "faster");
  EXPECT_EQ(pushed->pairs, 6u);
  ASSERT_EQ(link_.pushed.size(), 1u);
  EXPECT_GE(link_.pushed[0].eager_threshold, 32 * kKiB);
  EXPECT_EQ(link_.compared[0].first.eager_threshold, 16 * kKiB);  // the A side: in force

  const auto rolled_back = StepAfter(watcher, 24 * kKiB, 200);
  ASSERT_TRUE(rolled_back);
  EXPECT_EQ(rolled_back->action, db::WatchAction::kRollBack) << rolled_back->reason;
  ASSERT_EQ(link_.pushed.size(), 2u);
  EXPECT_EQ(link_.pushed[1].eager_threshold, 16 * kKiB);
  EXPECT_EQ(watcher.changes(), 2u);
}

TEST_F(WatcherTest, AChangeThatHoldsAtTheRecheckStays) {
  Watcher watcher(link_, SyntheticModel(), options_);
  StepAfter(watcher, 1000, 0);
  StepAfter(watcher, 1000, 200);
  link_.outcomes = {kFaster, kNoise};
  ASSERT_EQ(StepAfter(watcher, 24 * kKiB, 200)->action, db::WatchAction::kPush);
  const auto rechecked = StepAfter(watcher, 24 * kKiB, 200);
  ASSERT_TRUE(rechecked);
  EXPECT_EQ(rechecked->action, db::WatchAction::kKeep) << rechecked->reason;
  EXPECT_EQ(link_.pushed.size(), 1u);
  EXPECT_FALSE(StepAfter(watcher, 24 * kKiB, 200));  // steady again: nothing measured
  EXPECT_EQ(link_.compared.size(), 2u);
}

TEST_F(WatcherTest, AConfigNotMeasuredFasterIsNeverPushed) {
  Watcher watcher(link_, SyntheticModel(), options_);
  StepAfter(watcher, 1000, 0);
  StepAfter(watcher, 1000, 200);
  link_.outcomes = {kNoise};
  const auto kept = StepAfter(watcher, 24 * kKiB, 200);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->action, db::WatchAction::kKeep) << kept->reason;
  EXPECT_EQ(kept->verdict, "within_noise");
  EXPECT_TRUE(link_.pushed.empty());
}

// A drift to sizes the config in force already sends best is not measured at all.
TEST_F(WatcherTest, ADriftTheConfigInForceAlreadyServesIsKeptWithoutMeasuring) {
  Watcher watcher(link_, SyntheticModel(), options_);
  StepAfter(watcher, 1000, 0);
  StepAfter(watcher, 1000, 200);
  const auto kept = StepAfter(watcher, 2 * kMiB, 200);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->action, db::WatchAction::kKeep) << kept->reason;
  EXPECT_EQ(kept->pairs, 0u);
  EXPECT_TRUE(link_.compared.empty());
}

TEST_F(WatcherTest, TheRateLimitHoldsAChangeWithoutMeasuringIt) {
  options_.policy.max_changes_per_hour = 1;
  Watcher watcher(link_, SyntheticModel(), options_);
  StepAfter(watcher, 1000, 0);
  StepAfter(watcher, 1000, 200);
  link_.outcomes = {kFaster, kNoise};
  ASSERT_EQ(StepAfter(watcher, 24 * kKiB, 200)->action, db::WatchAction::kPush);
  ASSERT_EQ(StepAfter(watcher, 24 * kKiB, 200)->action, db::WatchAction::kKeep);  // re-check
  // Someone set a 4 KiB threshold by hand, and 12 KiB messages follow: a higher
  // threshold is predicted better, but the hour's one change is spent.
  link_.in_force.eager_threshold = 4 * kKiB;
  const auto held = StepAfter(watcher, 12 * kKiB, 200);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->action, db::WatchAction::kHold) << held->reason;
  EXPECT_NE(held->reason.find("--max-changes-per-hour 1"), std::string::npos) << held->reason;
  EXPECT_EQ(link_.compared.size(), 2u);
}

TEST_F(WatcherTest, ADryRunMeasuresAndStoresButNeverPushes) {
  options_.dry_run = true;
  Watcher watcher(link_, SyntheticModel(), options_);
  StepAfter(watcher, 1000, 0);
  StepAfter(watcher, 1000, 200);
  link_.outcomes = {kFaster};
  const auto held = StepAfter(watcher, 24 * kKiB, 200);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->action, db::WatchAction::kHold) << held->reason;
  EXPECT_NE(held->reason.find("--dry-run"), std::string::npos) << held->reason;
  EXPECT_TRUE(link_.pushed.empty());
}

}  // namespace
}  // namespace artune::watch
