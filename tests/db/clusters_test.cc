// Cluster runs and their links in and out of the store, the rules --resume relies
// on (one row per link, refused twice), and the v6 -> v7 upgrade.
#include <gtest/gtest.h>

#include "artune/db/store.h"
#include "migrations.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using testing::TempDir;

ClusterRecord SampleCluster(uint32_t ranks = 4) {
  ClusterRecord cluster;
  cluster.ranks = ranks;
  cluster.pairs = "all";
  cluster.measurement = "sweep";
  cluster.parameters = {{"repeats", "1"}, {"seed", "7"}, {"knob", "eager_threshold=1KiB,4KiB"}};
  return cluster;
}

SweepRecord LinkSweep(const std::string& host, const std::string& peer) {
  SweepRecord sweep;
  sweep.host = host;
  sweep.peer = peer;
  sweep.fabric = "tcp";
  sweep.objective = "latency-p50";
  sweep.goal = "min";
  sweep.strategy = "grid";
  sweep.workload = "scheme:uniform";
  return sweep;
}

ClusterLinkRecord SampleLink(int64_t cluster_id, uint32_t round, uint32_t pair, uint32_t client,
                             uint32_t server, int64_t sweep_id) {
  ClusterLinkRecord link;
  link.cluster_id = cluster_id;
  link.round = round;
  link.pair = pair;
  link.client_rank = client;
  link.server_rank = server;
  link.client_host = "node" + std::to_string(client);
  link.server_host = "node" + std::to_string(server);
  link.client_device = "tcp:veth" + std::to_string(client);
  link.server_device = "rxe0";
  link.status = sweep_id != 0 ? LinkStatus::kOk : LinkStatus::kFailed;
  link.error = sweep_id != 0 ? "" : "peer 10.0.0.9:40000 did not answer";
  link.sweep_id = sweep_id;
  return link;
}

class ClusterStoreTest : public testing::StoreFixture {
 protected:
  int64_t NewCluster(const ClusterRecord& cluster = SampleCluster()) {
    auto id = store_->InsertCluster(cluster);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }

  int64_t NewSweep(const std::string& host = "node0", const std::string& peer = "10.0.0.2:4000") {
    auto id = store_->InsertSweep(LinkSweep(host, peer));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
};

TEST_F(ClusterStoreTest, ClusterRoundTripsWithParametersAndFinishes) {
  const int64_t id = NewCluster();
  auto read = store_->GetCluster(id);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->id, id);
  EXPECT_EQ(read->ranks, 4u);
  EXPECT_EQ(read->pairs, "all");
  EXPECT_EQ(read->measurement, "sweep");
  EXPECT_EQ(read->parameters, SampleCluster().parameters);
  EXPECT_FALSE(read->created_at.empty());
  EXPECT_TRUE(read->finished_at.empty());

  ASSERT_TRUE(store_->FinishCluster(id).ok());
  read = store_->GetCluster(id);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->finished_at.empty());
  EXPECT_EQ(store_->FinishCluster(id + 1).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->GetCluster(id + 1).status().code(), ErrorCode::kNotFound);
}

TEST_F(ClusterStoreTest, ListIsNewestFirstAndHonoursTheLimit) {
  ClusterRecord older = SampleCluster(2);
  older.created_at = "2026-01-01T00:00:00.000Z";
  ClusterRecord newer = SampleCluster(8);
  newer.created_at = "2026-02-01T00:00:00.000Z";
  newer.pairs = "random:3";
  newer.measurement = "ab";
  NewCluster(older);
  NewCluster(newer);
  auto all = store_->ListClusters(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].pairs, "random:3");
  EXPECT_EQ((*all)[0].measurement, "ab");
  EXPECT_EQ((*all)[1].ranks, 2u);
  EXPECT_EQ((*all)[1].parameters.at("seed"), "7");
  auto one = store_->ListClusters(1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  EXPECT_EQ(store_->ListClusters(-1).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(ClusterStoreTest, RefusesClustersItCannotDescribe) {
  EXPECT_EQ(store_->InsertCluster(SampleCluster(1)).status().code(), ErrorCode::kInvalidArgument);
  ClusterRecord no_pairs = SampleCluster();
  no_pairs.pairs = "";
  EXPECT_EQ(store_->InsertCluster(no_pairs).status().code(), ErrorCode::kInvalidArgument);
  ClusterRecord unknown = SampleCluster();
  unknown.measurement = "bench";
  EXPECT_EQ(store_->InsertCluster(unknown).status().code(), ErrorCode::kInvalidArgument);
  ClusterRecord empty_name = SampleCluster();
  empty_name.parameters[""] = "x";
  EXPECT_EQ(store_->InsertCluster(empty_name).status().code(), ErrorCode::kInvalidArgument);
  auto all = store_->ListClusters(0);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty()) << "a refused cluster left a row";
}

TEST_F(ClusterStoreTest, LinksRoundTripInScheduleOrderWithTheirSweeps) {
  const int64_t cluster = NewCluster();
  const int64_t sweep_a = NewSweep("node0", "10.0.0.2:4000");
  const int64_t sweep_b = NewSweep("node1", "10.0.0.4:4000");
  // Stored out of order: the list comes back by round, then pair.
  ASSERT_TRUE(store_->InsertClusterLink(SampleLink(cluster, 1, 0, 1, 3, sweep_b)).ok());
  ASSERT_TRUE(store_->InsertClusterLink(SampleLink(cluster, 0, 1, 2, 3, 0)).ok());
  ASSERT_TRUE(store_->InsertClusterLink(SampleLink(cluster, 0, 0, 0, 1, sweep_a)).ok());

  auto links = store_->ListClusterLinks(cluster);
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  ASSERT_EQ(links->size(), 3u);
  EXPECT_EQ((*links)[0].client_rank, 0u);
  EXPECT_EQ((*links)[0].server_rank, 1u);
  EXPECT_EQ((*links)[0].sweep_id, sweep_a);
  EXPECT_EQ((*links)[0].status, LinkStatus::kOk);
  EXPECT_EQ((*links)[0].client_host, "node0");
  EXPECT_EQ((*links)[0].client_device, "tcp:veth0");
  EXPECT_EQ((*links)[0].server_host, "node1");
  EXPECT_EQ((*links)[0].server_device, "rxe0");
  EXPECT_FALSE((*links)[0].finished_at.empty());
  EXPECT_EQ((*links)[1].status, LinkStatus::kFailed);
  EXPECT_EQ((*links)[1].sweep_id, 0) << "a failed link without a sweep reads back 0";
  EXPECT_EQ((*links)[1].error, "peer 10.0.0.9:40000 did not answer");
  EXPECT_EQ((*links)[2].round, 1u);
  EXPECT_EQ((*links)[2].sweep_id, sweep_b);

  // The link's sweep is an ordinary sweep.
  auto sweep = store_->GetSweep((*links)[2].sweep_id);
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->host, "node1");
}

TEST_F(ClusterStoreTest, ALinkIsStoredOnce) {
  const int64_t cluster = NewCluster();
  const int64_t sweep = NewSweep();
  ASSERT_TRUE(store_->InsertClusterLink(SampleLink(cluster, 0, 0, 0, 1, sweep)).ok());
  // The same ranks at another position, and another link at the same position.
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 2, 1, 0, 1, sweep)).code(),
            ErrorCode::kAlreadyExists);
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 0, 0, 2, 3, 0)).code(),
            ErrorCode::kAlreadyExists);
  // Another cluster may measure the same ranks.
  const int64_t other = NewCluster();
  EXPECT_TRUE(store_->InsertClusterLink(SampleLink(other, 0, 0, 0, 1, sweep)).ok());
  auto links = store_->ListClusterLinks(cluster);
  ASSERT_TRUE(links.ok());
  EXPECT_EQ(links->size(), 1u);
}

TEST_F(ClusterStoreTest, AFailedLinkIsReplacedByItsNewResult) {
  const int64_t cluster = NewCluster();
  const int64_t old_sweep = NewSweep();
  ClusterLinkRecord failed = SampleLink(cluster, 1, 0, 0, 2, 0);
  failed.sweep_id = old_sweep;  // a failed link may keep the trials it finished
  ASSERT_TRUE(store_->InsertClusterLink(failed).ok());
  // Another failed link cannot take its place in the schedule.
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 1, 0, 1, 3, 0)).code(),
            ErrorCode::kAlreadyExists);
  const int64_t new_sweep = NewSweep();
  ASSERT_TRUE(store_->InsertClusterLink(SampleLink(cluster, 1, 0, 0, 2, new_sweep)).ok());
  auto links = store_->ListClusterLinks(cluster);
  ASSERT_TRUE(links.ok());
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ((*links)[0].status, LinkStatus::kOk);
  EXPECT_EQ((*links)[0].sweep_id, new_sweep);
  EXPECT_TRUE((*links)[0].error.empty());
  EXPECT_TRUE(store_->GetSweep(old_sweep).ok()) << "the failed attempt's sweep stays";
  // An ok link is never replaced, not even by a failure.
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 1, 0, 0, 2, 0)).code(),
            ErrorCode::kAlreadyExists);
}

TEST_F(ClusterStoreTest, RefusesLinksThatCannotBe) {
  const int64_t cluster = NewCluster(SampleCluster(4));
  const int64_t sweep = NewSweep();
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster + 1, 0, 0, 0, 1, sweep)).code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 0, 0, 0, 1, sweep + 1)).code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 0, 0, 2, 2, sweep)).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->InsertClusterLink(SampleLink(cluster, 0, 0, 0, 4, sweep)).code(),
            ErrorCode::kInvalidArgument);
  ClusterLinkRecord ok_without_sweep = SampleLink(cluster, 0, 0, 0, 1, sweep);
  ok_without_sweep.sweep_id = 0;
  EXPECT_EQ(store_->InsertClusterLink(ok_without_sweep).code(), ErrorCode::kInvalidArgument);
  ClusterLinkRecord failed_without_reason = SampleLink(cluster, 0, 0, 0, 1, 0);
  failed_without_reason.error.clear();
  EXPECT_EQ(store_->InsertClusterLink(failed_without_reason).code(), ErrorCode::kInvalidArgument);
  auto links = store_->ListClusterLinks(cluster);
  ASSERT_TRUE(links.ok());
  EXPECT_TRUE(links->empty());
  EXPECT_EQ(store_->ListClusterLinks(cluster + 1).status().code(), ErrorCode::kNotFound);
}

TEST(LinkStatusNames, RoundTrip) {
  for (LinkStatus status : {LinkStatus::kOk, LinkStatus::kFailed}) {
    EXPECT_EQ(ParseLinkStatus(LinkStatusName(status)), status);
  }
  EXPECT_EQ(LinkStatusName(LinkStatus::kFailed), "failed");
  EXPECT_FALSE(ParseLinkStatus("invalid").has_value());
}

TEST(ClusterMigration, UpgradeFromV6KeepsSweepsAndAddsClusters) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  int64_t sweep = 0;
  {
    auto v6 = OpenWithMigrations(path, OpenMode::kCreate, BuiltinMigrations().first(6));
    ASSERT_TRUE(v6.ok()) << v6.status().ToString();
    auto info = (*v6)->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->schema_version, 6);
    EXPECT_EQ(info->row_counts.count("clusters"), 0u);
    auto inserted = (*v6)->InsertSweep(LinkSweep("node0", "10.0.0.2:4000"));
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
    sweep = *inserted;
  }
  auto store = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto info = (*store)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->schema_version, static_cast<int>(BuiltinMigrations().size()));
  EXPECT_EQ(info->row_counts.at("sweeps"), 1);
  EXPECT_EQ(info->row_counts.at("clusters"), 0);
  EXPECT_EQ(info->row_counts.at("cluster_links"), 0);
  auto cluster = (*store)->InsertCluster(SampleCluster(2));
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  // A sweep stored before the upgrade can be a link's measurement.
  EXPECT_TRUE((*store)->InsertClusterLink(SampleLink(*cluster, 0, 0, 0, 1, sweep)).ok());
}

}  // namespace
}  // namespace artune::db
