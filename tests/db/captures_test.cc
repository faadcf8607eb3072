// Captures in and out of the store, and the v1 -> v2 upgrade that adds them.
#include <gtest/gtest.h>

#include "artune/db/store.h"
#include "migration_util.h"
#include "migrations.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

CaptureRecord SampleCapture(int sequence) {
  CaptureRecord capture;
  capture.backend = "pcap";
  capture.process = sequence % 2 == 0 ? "trainer" : "";
  capture.duration_s = 1.5 + sequence;
  capture.lost_events = static_cast<uint64_t>(sequence);
  capture.profile_json = R"({"backend":"pcap","sequence":)" + std::to_string(sequence) + "}";
  capture.methods.push_back({"/tf.Worker/RecvTensor", "request", 10, 500, "uniform", 10, 0, 0});
  capture.methods.push_back(
      {"/tf.Worker/RecvTensor", "response", 10, 20u << 20, "skew", 2, 3, 5 + uint64_t(sequence)});
  return capture;
}

void ExpectSameCapture(const CaptureRecord& got, const CaptureRecord& want) {
  EXPECT_EQ(got.backend, want.backend);
  EXPECT_EQ(got.process, want.process);
  EXPECT_EQ(got.duration_s, want.duration_s);
  EXPECT_EQ(got.lost_events, want.lost_events);
  EXPECT_EQ(got.profile_json, want.profile_json);
  ASSERT_EQ(got.methods.size(), want.methods.size());
  for (size_t i = 0; i < got.methods.size(); ++i) {
    EXPECT_EQ(got.methods[i].method, want.methods[i].method);
    EXPECT_EQ(got.methods[i].direction, want.methods[i].direction);
    EXPECT_EQ(got.methods[i].messages, want.methods[i].messages);
    EXPECT_EQ(got.methods[i].bytes, want.methods[i].bytes);
    EXPECT_EQ(got.methods[i].scheme, want.methods[i].scheme);
    EXPECT_EQ(got.methods[i].small, want.methods[i].small);
    EXPECT_EQ(got.methods[i].medium, want.methods[i].medium);
    EXPECT_EQ(got.methods[i].large, want.methods[i].large);
  }
}

class CaptureStoreTest : public testing::StoreFixture {};

TEST_F(CaptureStoreTest, InsertThenGetRoundTripsEveryField) {
  CaptureRecord capture = SampleCapture(2);
  capture.id = 999;  // ignored
  auto id = store_->InsertCapture(capture);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_GT(*id, 0);
  EXPECT_NE(*id, 999);
  auto got = store_->GetCapture(*id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, *id);
  EXPECT_FALSE(got->started_at.empty());
  ExpectSameCapture(*got, capture);
  auto info = store_->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->row_counts.at("captures"), 1);
  EXPECT_EQ(info->row_counts.at("capture_methods"), 2);
}

TEST_F(CaptureStoreTest, ListIsNewestFirstAndHonoursTheLimit) {
  CaptureRecord older = SampleCapture(1);
  older.started_at = "2024-01-01T00:00:00.000Z";
  CaptureRecord newer = SampleCapture(2);
  newer.started_at = "2025-01-01T00:00:00.000Z";
  CaptureRecord middle = SampleCapture(3);
  middle.started_at = "2024-06-01T00:00:00.000Z";
  for (const CaptureRecord* capture : {&older, &newer, &middle}) {
    ASSERT_TRUE(store_->InsertCapture(*capture).ok());
  }
  auto all = store_->ListCaptures(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].started_at, newer.started_at);
  EXPECT_EQ((*all)[1].started_at, middle.started_at);
  EXPECT_EQ((*all)[2].started_at, older.started_at);
  ExpectSameCapture((*all)[1], middle);
  auto two = store_->ListCaptures(2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].started_at, middle.started_at);
  EXPECT_EQ(store_->ListCaptures(-1).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(CaptureStoreTest, UnknownIdIsNotFound) {
  auto got = store_->GetCapture(42);
  ASSERT_EQ(got.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(got.status().message().find("no capture with id 42"), std::string::npos);
}

TEST_F(CaptureStoreTest, RejectsInvalidRecordsWithoutWritingAnything) {
  CaptureRecord no_backend = SampleCapture(1);
  no_backend.backend.clear();
  EXPECT_EQ(store_->InsertCapture(no_backend).status().code(), ErrorCode::kInvalidArgument);
  CaptureRecord no_profile = SampleCapture(1);
  no_profile.profile_json.clear();
  EXPECT_EQ(store_->InsertCapture(no_profile).status().code(), ErrorCode::kInvalidArgument);
  // A repeated method row fails after the capture row went in: the transaction
  // must take the capture row back out.
  CaptureRecord repeated = SampleCapture(1);
  repeated.methods.push_back(repeated.methods[0]);
  auto status = store_->InsertCapture(repeated).status();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("twice"), std::string::npos) << status.ToString();
  CaptureRecord too_big = SampleCapture(1);
  too_big.methods[1].bytes = ~0ull;
  EXPECT_EQ(store_->InsertCapture(too_big).status().code(), ErrorCode::kInvalidArgument);
  auto info = store_->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->row_counts.at("captures"), 0);
  EXPECT_EQ(info->row_counts.at("capture_methods"), 0);
}

TEST(CaptureMigration, UpgradeFromV1KeepsBenchRunsAndAddsCaptures) {
  TempDir dir;
  const UpgradedStore upgraded =
      UpgradeWithRow(dir.File("artune.db"), 1, "captures",
                     [](Store& v1) { return v1.InsertBenchRun(SampleRun(4, 3)); },
                     {{"bench_runs", 1}, {"captures", 0}});
  const std::unique_ptr<Store>& store = upgraded.store;
  ASSERT_NE(store, nullptr);
  auto run = store->GetBenchRun(upgraded.old_row);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->config, SampleRun(4, 3).config);
  auto id = store->InsertCapture(SampleCapture(5));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto got = store->GetCapture(*id);
  ASSERT_TRUE(got.ok());
  ExpectSameCapture(*got, SampleCapture(5));
}

}  // namespace
}  // namespace artune::db
