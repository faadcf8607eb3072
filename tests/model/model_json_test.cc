// What `artune predict` keeps in flight per pass, and a link model's JSON.
#include "artune/model/model_json.h"

#include <gtest/gtest.h>

namespace artune::model {
namespace {

tuner::Workload WorkloadOf(size_t messages, uint32_t captured_inflight) {
  tuner::Workload workload;
  Result<tuner::Payload> payload = tuner::GeneratePayload(tuner::PayloadSpec{});
  EXPECT_TRUE(payload.ok()) << payload.status().ToString();
  for (size_t i = 0; i < messages; ++i) workload.messages.push_back(*payload);
  workload.captured_inflight = captured_inflight;
  return workload;
}

TEST(PassInflightTest, ThePlanThenTheCaptureCappedThenTheSweepsDefault) {
  tuner::SweepPlan plan;
  plan.inflight = 3;
  EXPECT_EQ(PassInflight(plan, WorkloadOf(100, 20)), 3);
  plan.inflight = 0;
  EXPECT_EQ(PassInflight(plan, WorkloadOf(100, 20)), 20);
  EXPECT_EQ(PassInflight(plan, WorkloadOf(1000, 500)), tuner::kMaxCapturedInflight);
  EXPECT_EQ(PassInflight(plan, WorkloadOf(100, 0)), tuner::kDefaultSweepInflight);
}

TEST(PassInflightTest, NeverMoreThanThePassHasMessages) {
  tuner::SweepPlan plan;
  plan.inflight = 16;
  EXPECT_EQ(PassInflight(plan, WorkloadOf(5, 0)), 5);
}

TEST(LinkModelJsonTest, PointsAreACountOrEveryPoint) {
  db::LinkModelRecord record;
  record.id = 3;
  record.points.resize(2);
  record.points[1].protocol = "eager";
  EXPECT_EQ(LinkModelJson(record, false).at("points"), 2);
  const nlohmann::ordered_json full = LinkModelJson(record, true);
  ASSERT_EQ(full.at("points").size(), 2u);
  EXPECT_EQ(full.at("points").at(1).at("protocol"), "eager");
  EXPECT_EQ(full.at("id"), 3);
}

}  // namespace
}  // namespace artune::model
