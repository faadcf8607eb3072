// A cluster run's links read back with their sweeps' verdicts, and the JSON of one
// such link as `artune sweep --mpi --json` lists it.
#include "artune/cluster/cluster_summary.h"

#include <gtest/gtest.h>

#include <memory>

#include "../sample_records.h"

namespace artune::tuner {
namespace {

db::ClusterLinkRecord Link(int64_t cluster_id, uint32_t pair, int64_t sweep_id) {
  db::ClusterLinkRecord link;
  link.cluster_id = cluster_id;
  link.pair = pair;
  link.client_rank = 2 * pair;
  link.server_rank = 2 * pair + 1;
  link.client_host = "a" + std::to_string(pair);
  link.server_host = "b" + std::to_string(pair);
  link.client_device = "rxe0";
  link.server_device = "rxe0";
  link.status = sweep_id != 0 ? db::LinkStatus::kOk : db::LinkStatus::kFailed;
  link.error = sweep_id != 0 ? "" : "peer did not answer";
  link.sweep_id = sweep_id;
  return link;
}

TEST(ClusterSummaryTest, LinksComeBackWithTheirSweepsVerdicts) {
  auto opened = db::Store::OpenInMemory();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  db::Store& store = **opened;
  db::ClusterRecord cluster;
  cluster.ranks = 4;
  cluster.pairs = "ring";
  cluster.measurement = "sweep";
  auto cluster_id = store.InsertCluster(cluster);
  ASSERT_TRUE(cluster_id.ok()) << cluster_id.status().ToString();
  auto sweep_id = store.InsertSweep(samples::GridSweep());
  ASSERT_TRUE(sweep_id.ok()) << sweep_id.status().ToString();
  db::SweepVerdict verdict;
  verdict.verdict = db::Verdict::kBeatsDefault;
  verdict.best_knobs = "eager_threshold=4KiB";
  ASSERT_TRUE(store.RecordSweepVerdict(*sweep_id, verdict).ok());
  ASSERT_TRUE(store.InsertClusterLink(Link(*cluster_id, 0, *sweep_id)).ok());
  ASSERT_TRUE(store.InsertClusterLink(Link(*cluster_id, 1, 0)).ok());

  auto links = ReadLinkVerdicts(store, *cluster_id);
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  ASSERT_EQ(links->size(), 2u);
  ASSERT_TRUE((*links)[0].verdict.has_value());
  EXPECT_EQ((*links)[0].verdict->best_knobs, "eager_threshold=4KiB");
  EXPECT_FALSE((*links)[1].verdict.has_value());

  const nlohmann::ordered_json measured = RunLinkJson((*links)[0], 1.5);
  EXPECT_EQ(measured["client_host"], "a0");
  EXPECT_EQ(measured["status"], "ok");
  EXPECT_EQ(measured["sweep_id"], *sweep_id);
  EXPECT_EQ(measured["verdict"], "beats_default");
  EXPECT_EQ(measured["winner"], "eager_threshold=4KiB");
  EXPECT_EQ(measured["seconds"], 1.5);
  EXPECT_EQ(measured["measured_now"], true);
  const nlohmann::ordered_json failed = RunLinkJson((*links)[1], std::nullopt);
  EXPECT_EQ(failed["error"], "peer did not answer");
  EXPECT_TRUE(failed["sweep_id"].is_null());
  EXPECT_TRUE(failed["verdict"].is_null());
  EXPECT_TRUE(failed["winner"].is_null());
  EXPECT_TRUE(failed["seconds"].is_null());
  EXPECT_EQ(failed["measured_now"], false);
}

}  // namespace
}  // namespace artune::tuner
