// Bench runs in and out of the store, and the default path.
#include "artune/db/store.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <optional>

#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

class StoreTest : public testing::StoreFixture {};

void ExpectSameRun(const BenchRun& got, const BenchRun& want) {
  EXPECT_EQ(got.host, want.host);
  EXPECT_EQ(got.peer, want.peer);
  EXPECT_EQ(got.transport, want.transport);
  EXPECT_EQ(got.benchmark, want.benchmark);
  EXPECT_EQ(got.scheme, want.scheme);
  EXPECT_EQ(got.fabric, want.fabric);
  EXPECT_EQ(got.config, want.config);
  EXPECT_EQ(got.parameters, want.parameters);
  EXPECT_EQ(got.payload_bytes, want.payload_bytes);
  EXPECT_EQ(got.duration_s, want.duration_s);
  EXPECT_EQ(got.rpcs, want.rpcs);
  EXPECT_EQ(got.latency.p50_us, want.latency.p50_us);
  EXPECT_EQ(got.latency.p99_us, want.latency.p99_us);
  EXPECT_EQ(got.latency.mean_us, want.latency.mean_us);
  EXPECT_EQ(got.latency.stddev_us, want.latency.stddev_us);
  EXPECT_EQ(got.bandwidth_mbps, want.bandwidth_mbps);
  EXPECT_EQ(got.rpcs_per_s, want.rpcs_per_s);
  EXPECT_EQ(got.validated, want.validated);
}

// "2024-05-01T12:34:56.789Z": digits where the pattern has 9, the rest literally.
bool LooksLikeIso8601Millis(const std::string& text) {
  const std::string pattern = "9999-99-99T99:99:99.999Z";
  if (text.size() != pattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (pattern[i] == '9' ? !digit : text[i] != pattern[i]) return false;
  }
  return true;
}

TEST_F(StoreTest, InsertThenGetRoundTripsEveryField) {
  BenchRun run = SampleRun(2, 12);
  run.config["path_with=and\"quotes"] = "value with spaces, commas and 'quotes'";
  run.parameters["unicode"] = "µs ≤ 10";
  run.validated = false;
  auto id = store_->InsertBenchRun(run);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_GT(*id, 0);
  auto got = store_->GetBenchRun(*id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, *id);
  ExpectSameRun(*got, run);
  // Assigned because the run had none: ISO 8601 UTC with milliseconds.
  EXPECT_TRUE(LooksLikeIso8601Millis(got->started_at)) << got->started_at;
}

TEST_F(StoreTest, KeepsAGivenStartTimeAndIgnoresAGivenId) {
  BenchRun run = SampleRun(1);
  run.id = 4242;
  run.started_at = "2023-01-02T03:04:05.678Z";
  auto id = store_->InsertBenchRun(run);
  ASSERT_TRUE(id.ok());
  EXPECT_NE(*id, 4242);
  auto got = store_->GetBenchRun(*id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->started_at, run.started_at);
}

TEST_F(StoreTest, RunWithoutConfigOrParameters) {
  BenchRun run = SampleRun(1, 0);
  run.parameters.clear();
  auto id = store_->InsertBenchRun(run);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto got = store_->GetBenchRun(*id);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->config.empty());
  EXPECT_TRUE(got->parameters.empty());
}

TEST_F(StoreTest, ListIsNewestFirstWithConfigsAndHonoursLimit) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    BenchRun run = SampleRun(i, 3 + i);
    run.started_at = "2024-01-01T00:00:0" + std::to_string(i) + ".000Z";
    auto id = store_->InsertBenchRun(run);
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  // Same start time as the newest: the higher id comes first.
  BenchRun tie = SampleRun(5);
  tie.started_at = "2024-01-01T00:00:04.000Z";
  auto tie_id = store_->InsertBenchRun(tie);
  ASSERT_TRUE(tie_id.ok());

  auto all = store_->ListBenchRuns(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 6u);
  EXPECT_EQ((*all)[0].id, *tie_id);
  for (int i = 0; i < 5; ++i) {
    const BenchRun& run = (*all)[static_cast<size_t>(i) + 1];
    EXPECT_EQ(run.id, ids[static_cast<size_t>(4 - i)]);
    ExpectSameRun(run, SampleRun(4 - i, 3 + (4 - i)));
  }

  auto two = store_->ListBenchRuns(2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id, *tie_id);
  EXPECT_EQ((*two)[1].id, ids[4]);

  auto many = store_->ListBenchRuns(100);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), 6u);
}

TEST_F(StoreTest, EmptyStoreListsNothing) {
  auto runs = store_->ListBenchRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST_F(StoreTest, NegativeLimitIsRejected) {
  auto runs = store_->ListBenchRuns(-1);
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(runs.status().message().find(
                "bench run list limit -1 is negative: pass 0 for all runs or a positive count"),
            std::string::npos)
      << runs.status().ToString();
}

TEST_F(StoreTest, CountPastTheStoresLimitIsRefusedNamingTheField) {
  BenchRun run = SampleRun(1);
  run.payload_bytes = std::numeric_limits<uint64_t>::max();
  auto id = store_->InsertBenchRun(run);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find(
                "bench run payload_bytes 18446744073709551615 is past the store's limit"),
            std::string::npos)
      << id.status().ToString();
  auto runs = store_->ListBenchRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST_F(StoreTest, UnknownIdIsNotFound) {
  auto run = store_->GetBenchRun(77);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(run.status().message().find("77"), std::string::npos);
}

TEST_F(StoreTest, FailedInsertLeavesNothingBehind) {
  ASSERT_TRUE(store_->InsertBenchRun(SampleRun(1)).ok());
  // The run row and its config rows are written before the bad parameter is
  // reached: all of it must roll back.
  BenchRun bad = SampleRun(2, 10);
  bad.parameters[""] = "nameless";
  auto id = store_->InsertBenchRun(bad);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument);

  auto info = store_->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->row_counts.at("bench_runs"), 1);
  EXPECT_EQ(info->row_counts.at("bench_run_config"), 5);
  EXPECT_EQ(info->row_counts.at("bench_run_parameters"), 2);
  // And the store still works.
  EXPECT_TRUE(store_->InsertBenchRun(SampleRun(3)).ok());
}

TEST_F(StoreTest, EmptyTransportViolatesTheSchema) {
  BenchRun bad = SampleRun(1);
  bad.transport.clear();
  auto id = store_->InsertBenchRun(bad);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument);
  auto runs = store_->ListBenchRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST_F(StoreTest, CountsPastInt64AreRejected) {
  BenchRun bad = SampleRun(1);
  bad.payload_bytes = ~uint64_t{0};
  auto id = store_->InsertBenchRun(bad);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("payload_bytes"), std::string::npos);
}

TEST_F(StoreTest, InfoCountsRowsPerTable) {
  ASSERT_TRUE(store_->InsertBenchRun(SampleRun(1, 4)).ok());
  ASSERT_TRUE(store_->InsertBenchRun(SampleRun(2, 6)).ok());
  auto info = store_->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->row_counts.at("bench_runs"), 2);
  EXPECT_EQ(info->row_counts.at("bench_run_config"), 10);
  EXPECT_EQ(info->row_counts.at("bench_run_parameters"), 4);
  EXPECT_EQ(info->row_counts.count("sqlite_sequence"), 0u);  // SQLite's own, not listed
  EXPECT_GT(info->file_bytes + info->wal_bytes, 0u);
}

// Sets or clears an environment variable for the scope, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name); old != nullptr) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DefaultDatabasePath, FollowsArtuneDbThenXdgThenHome) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv artune_db("ARTUNE_DB", "/srv/artune/runs.db");
    ScopedEnv xdg("XDG_DATA_HOME", "/data");
    EXPECT_EQ(DefaultDatabasePath(), "/srv/artune/runs.db");
  }
  ScopedEnv artune_db("ARTUNE_DB", nullptr);
  {
    ScopedEnv xdg("XDG_DATA_HOME", "/data");
    EXPECT_EQ(DefaultDatabasePath(), "/data/artune/artune.db");
  }
  {
    ScopedEnv xdg("XDG_DATA_HOME", "relative/ignored");
    EXPECT_EQ(DefaultDatabasePath(), "/home/someone/.local/share/artune/artune.db");
  }
  ScopedEnv xdg("XDG_DATA_HOME", nullptr);
  EXPECT_EQ(DefaultDatabasePath(), "/home/someone/.local/share/artune/artune.db");
  EXPECT_EQ(ResolveDatabasePath(""), "/home/someone/.local/share/artune/artune.db");
  EXPECT_EQ(ResolveDatabasePath("/tmp/x.db"), "/tmp/x.db");
}

}  // namespace
}  // namespace artune::db
