// Cluster runs and their links in and out of the store, the rules --resume relies
// on (one row per link, refused twice), the v6 -> v7 upgrade, and (v12) runs of
// link models whose links point at their models, and the v11 -> v12 upgrade.
#include <gtest/gtest.h>

#include "../sample_records.h"
#include "artune/db/store.h"
#include "migration_util.h"
#include "migrations.h"
#include "sqlite.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

ClusterRecord SampleCluster(uint32_t ranks = 4) {
  ClusterRecord cluster;
  cluster.ranks = ranks;
  cluster.pairs = "all";
  cluster.measurement = "sweep";
  cluster.parameters = {{"repeats", "1"}, {"seed", "7"}, {"knob", "eager_threshold=1KiB,4KiB"}};
  return cluster;
}

SweepRecord LinkSweep(const std::string& host, const std::string& peer) {
  SweepRecord sweep = samples::GridSweep();
  sweep.host = host;
  sweep.peer = peer;
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
  const UpgradedStore upgraded =
      UpgradeWithRow(dir.File("artune.db"), 6, "clusters",
                     [](Store& v6) { return v6.InsertSweep(LinkSweep("node0", "10.0.0.2:4000")); },
                     {{"sweeps", 1}, {"clusters", 0}, {"cluster_links", 0}});
  const std::unique_ptr<Store>& store = upgraded.store;
  ASSERT_NE(store, nullptr);
  const int64_t sweep = upgraded.old_row;
  auto cluster = store->InsertCluster(SampleCluster(2));
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  // A sweep stored before the upgrade can be a link's measurement.
  EXPECT_TRUE(store->InsertClusterLink(SampleLink(*cluster, 0, 0, 0, 1, sweep)).ok());
}

LinkModelRecord LinkModel(const std::string& host) {
  LinkModelRecord model;
  model.host = host;
  model.peer = "10.0.0.2:4000";
  model.fabric = "tcp";
  model.duration_s = 3.2;
  model.points = {{"eager", "adaptive", 0, 0, 64, 1, 12e-6, 11e-6, 14e-6, 1}};
  return model;
}

TEST_F(ClusterStoreTest, AModelRunsLinksPointAtTheirModels) {
  ClusterRecord record = SampleCluster(3);
  record.measurement = "model";
  const int64_t cluster = NewCluster(record);
  auto model = store_->InsertLinkModel(LinkModel("node0"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ClusterLinkRecord link = SampleLink(cluster, 0, 0, 0, 1, 0);
  link.status = LinkStatus::kOk;
  link.error = "";
  link.model_id = *model;
  ASSERT_TRUE(store_->InsertClusterLink(link).ok());
  // A model that is not stored is refused, saying so.
  ClusterLinkRecord dangling = SampleLink(cluster, 1, 0, 1, 2, 0);
  dangling.status = LinkStatus::kOk;
  dangling.error = "";
  dangling.model_id = *model + 100;
  const Status refused = store_->InsertClusterLink(dangling);
  EXPECT_EQ(refused.code(), ErrorCode::kNotFound) << refused.ToString();
  EXPECT_NE(refused.message().find("no link model with id"), std::string::npos);
  // An ok link with neither a sweep nor a model points at nothing.
  dangling.model_id = 0;
  EXPECT_EQ(store_->InsertClusterLink(dangling).code(), ErrorCode::kInvalidArgument);
  auto stored = store_->GetCluster(cluster);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->measurement, "model");
  auto links = store_->ListClusterLinks(cluster);
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ(links->front().model_id, *model);
  EXPECT_EQ(links->front().sweep_id, 0);
  EXPECT_EQ(links->front().status, LinkStatus::kOk);
  record.measurement = "guess";
  EXPECT_EQ(store_->InsertCluster(record).status().code(), ErrorCode::kInvalidArgument);
}

// A store of v11 (clusters.measurement 'sweep' | 'ab', links without model_id):
// its runs, parameters and links read back the same after the rebuild of v12, the
// links without a model; the new tables keep their keys, checks and cascades.
TEST(ClusterMigration, UpgradeFromV11KeepsRunsAndLinksAndAdmitsModels) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  ClusterRecord old_cluster = SampleCluster(3);
  std::vector<ClusterLinkRecord> old_links;
  int64_t cluster = 0;
  {
    std::unique_ptr<Store> v11 = OpenAtVersion(path, 11);
    ASSERT_NE(v11, nullptr);
    auto inserted = v11->InsertCluster(old_cluster);
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
    cluster = *inserted;
    auto sweep = v11->InsertSweep(LinkSweep("node0", "10.0.0.2:4000"));
    ASSERT_TRUE(sweep.ok());
    // Rows as a v11 build wrote them: an ok link with its sweep, a failed one.
    auto db = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO cluster_links (cluster_id, round, pair, client_rank, "
                         "server_rank, client_host, client_device, server_host, server_device, "
                         "status, error, sweep_id, finished_at) VALUES (" +
                         std::to_string(cluster) +
                         ", 0, 0, 0, 1, 'node0', 'tcp:v0', 'node1', "
                         "'tcp:v1', 'ok', '', " +
                         std::to_string(*sweep) + ", '2026-11-27T10:00:00.000Z'), (" +
                         std::to_string(cluster) +
                         ", 1, 0, 1, 2, 'node1', 'tcp:v1', 'node2', 'tcp:v2', 'failed', "
                         "'peer did not answer', NULL, '2026-11-27T10:00:01.000Z');")
                    .ok());
    // What those rows are (this build's ListClusterLinks reads model_id, which a
    // v11 file lacks).
    ClusterLinkRecord ok = SampleLink(cluster, 0, 0, 0, 1, *sweep);
    ok.client_device = "tcp:v0";
    ok.finished_at = "2026-11-27T10:00:00.000Z";
    ClusterLinkRecord failed = SampleLink(cluster, 1, 0, 1, 2, 0);
    failed.client_device = "tcp:v1";
    failed.error = "peer did not answer";
    failed.finished_at = "2026-11-27T10:00:01.000Z";
    old_links = {ok, failed};
  }
  auto store = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto info = (*store)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->schema_version, 12);
  auto read = (*store)->GetCluster(cluster);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ranks, old_cluster.ranks);
  EXPECT_EQ(read->pairs, old_cluster.pairs);
  EXPECT_EQ(read->measurement, "sweep");
  EXPECT_EQ(read->parameters, old_cluster.parameters);
  auto links = (*store)->ListClusterLinks(cluster);
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  ASSERT_EQ(links->size(), old_links.size());
  for (size_t i = 0; i < links->size(); ++i) {
    const ClusterLinkRecord& now = (*links)[i];
    const ClusterLinkRecord& before = old_links[i];
    EXPECT_EQ(now.client_rank, before.client_rank);
    EXPECT_EQ(now.server_rank, before.server_rank);
    EXPECT_EQ(now.client_device, before.client_device);
    EXPECT_EQ(now.status, before.status);
    EXPECT_EQ(now.error, before.error);
    EXPECT_EQ(now.sweep_id, before.sweep_id);
    EXPECT_EQ(now.finished_at, before.finished_at);
    EXPECT_EQ(now.model_id, 0);
  }
  // A new run gets the next id, may measure models, and its links keep the
  // schedule's uniqueness.
  ClusterRecord model_run = SampleCluster(2);
  model_run.measurement = "model";
  auto next = (*store)->InsertCluster(model_run);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_GT(*next, cluster);
  auto model = (*store)->InsertLinkModel(LinkModel("node0"));
  ASSERT_TRUE(model.ok());
  ClusterLinkRecord link = SampleLink(*next, 0, 0, 0, 1, 0);
  link.status = LinkStatus::kOk;
  link.error = "";
  link.model_id = *model;
  EXPECT_TRUE((*store)->InsertClusterLink(link).ok());
  EXPECT_EQ((*store)->InsertClusterLink(link).code(), ErrorCode::kAlreadyExists);
  // The children reference the renamed parent: deleting a run deletes its links
  // and parameters, and a link of no run is refused.
  auto db = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("PRAGMA foreign_keys = ON").ok());
  ASSERT_TRUE(db->Exec("DELETE FROM clusters WHERE id = " + std::to_string(cluster)).ok());
  EXPECT_EQ(*db->QueryInt64("SELECT count(*) FROM cluster_links WHERE cluster_id = " +
                            std::to_string(cluster)),
            0);
  EXPECT_EQ(*db->QueryInt64("SELECT count(*) FROM cluster_parameters WHERE cluster_id = " +
                            std::to_string(cluster)),
            0);
  EXPECT_FALSE(db->Exec("INSERT INTO cluster_links (cluster_id, round, pair, client_rank, "
                        "server_rank, client_host, client_device, server_host, server_device, "
                        "status, error, finished_at) VALUES (999, 0, 0, 0, 1, 'a', 'b', 'c', 'd', "
                        "'failed', 'x', 'now')")
                   .ok());
  auto schema = db->QueryText("SELECT sql FROM sqlite_schema WHERE name = 'cluster_links'");
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->find("clusters_v12"), std::string::npos) << *schema;
}

}  // namespace
}  // namespace artune::db
