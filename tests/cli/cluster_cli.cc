// `artune results --clusters / --cluster ID`, `artune apply config --cluster ID` and
// `artune report --cluster ID` over synthetic cluster runs (cluster_fixture.h) written
// with the db::Store API: the links, the winner by either goal, the heatmap, the
// outlier link, the host groups with one config each, the failed link.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "apply_cli_fixture.h"
#include "artune/cluster/cluster_choice.h"
#include "artune/db/store.h"
#include "cluster_fixture.h"
#include "cluster_model_fixture.h"

namespace {

using namespace artune_cli_test;

class ClusterCliTest : public ApplyCliTest {
 protected:
  void SetUp() override {
    ApplyCliTest::SetUp();
    auto opened = artune::db::Store::Open(StorePath());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto two = artune_cluster_test::WriteTwoModelCluster(**opened);
    ASSERT_TRUE(two.ok()) << two.status().ToString();
    ASSERT_EQ(*two, 1);
    auto one = artune_cluster_test::WriteOneModelCluster(**opened);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    ASSERT_EQ(*one, 2);
  }
};

TEST_F(ClusterCliTest, ClustersListsTheRuns) {
  const Outcome listed = Run("results --clusters");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("RANKS  PAIRS  MEASUREMENT  STATE"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("5  all    sweep        finished"), std::string::npos) << listed.out;
  const Outcome limited = Run("results --clusters --limit 1");
  EXPECT_NE(limited.out.find("(1 newest of 2 clusters; --limit 0 shows all, `artune results "
                             "--cluster ID` one in full)"),
            std::string::npos)
      << limited.out;
  const Outcome as_json = Run("results --clusters --json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json document = json::parse(as_json.out);
  EXPECT_EQ(document.at("total_clusters"), 2);
  EXPECT_EQ(document.at("clusters").at(1).at("pairs"), "all");
  EXPECT_EQ(document.at("clusters").at(1).at("ranks"), 5);
}

TEST_F(ClusterCliTest, ClusterShowsLinksWinnerHeatmapOutliersGroupsAndFailures) {
  const Outcome shown = Run("results --cluster 1");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const std::string& out = shown.out;
  EXPECT_NE(out.find("Cluster 1  5 ranks, pairs all, measurement sweep, 7 links (6 measured, 1 "
                     "failed)"),
            std::string::npos)
      << out;
  // The a -> b link: best X at 5 against the default's 10.
  EXPECT_NE(out.find("a (mlx5_0)  b (mlx5_0)  ok"), std::string::npos) << out;
  EXPECT_NE(out.find("eager_threshold=4KiB        5.00    10.00  2.00x    5.00"), std::string::npos)
      << out;
  EXPECT_NE(out.find("Winner   eager_threshold=4KiB by worst-link: worst link 16.00 (b ↔ d)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Default  eager_threshold=16KiB: worst link 20.00 (b ↔ d)"), std::string::npos)
      << out;
  // The heatmap, plain (stdout is a pipe): b -> d starred as the outlier.
  EXPECT_NE(out.find("workload-time under the winner eager_threshold=4KiB, client (rows) to "
                     "server (columns)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("client \\ server       a       b       c       d       e"), std::string::npos)
      << out;
  EXPECT_NE(out.find("b                     -       -    8.00  16.00!       -"), std::string::npos)
      << out;
  EXPECT_NE(out.find("d                     -       -       -       -    FAIL"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("\x1b["), std::string::npos) << "no colour into a pipe";
  EXPECT_NE(out.find("look at the link b ↔ d: 10.8 MAD slower than the median under the winner "
                     "(16.00 against 8.00)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Host groups: the hosts have different devices: a, b (mlx5); c, d, e (rxe)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rxe      c, d, e      1  eager_threshold=64KiB"), std::string::npos) << out;
  EXPECT_NE(out.find("d ↔ e (round 3, pair 0): peer 10.0.0.5:40000 did not answer"),
            std::string::npos)
      << out;
}

TEST_F(ClusterCliTest, ClusterJsonCarriesTheSameAnalysis) {
  const Outcome shown = Run("results --cluster 1 --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const json j = json::parse(shown.out);
  EXPECT_EQ(j.at("objective"), "workload-time");
  EXPECT_EQ(j.at("cluster_goal"), "worst-link");
  EXPECT_EQ(j.at("winner").at("knobs"), "eager_threshold=4KiB");
  EXPECT_EQ(j.at("winner").at("worst"), 16.0);
  EXPECT_EQ(j.at("winner").at("worst_link").at("client_host"), "b");
  EXPECT_EQ(j.at("links").size(), 7u);
  EXPECT_EQ(j.at("links").at(0).at("best").at("knobs"), "eager_threshold=4KiB");
  EXPECT_EQ(j.at("links").at(0).at("gain"), 2.0);
  EXPECT_EQ(j.at("links").at(3).at("outlier"), true);
  EXPECT_TRUE(j.at("links").at(6).at("sweep_id").is_null());
  EXPECT_EQ(j.at("heatmap").at("hosts"), json({"a", "b", "c", "d", "e"}));
  EXPECT_EQ(j.at("heatmap").at("cells").at(1).at(3), 16.0);
  EXPECT_TRUE(j.at("heatmap").at("cells").at(1).at(0).is_null());
  ASSERT_EQ(j.at("outliers").size(), 1u);
  EXPECT_EQ(j.at("outliers").at(0).at("server_host"), "d");
  EXPECT_EQ(j.at("outliers").at(0).at("median"), 8.0);
  EXPECT_NEAR(j.at("outliers").at(0).at("deviations").get<double>(), 8 / (0.5 * 1.4826), 1e-9);
  EXPECT_EQ(j.at("host_groups").at("winners_differ"), true);
  EXPECT_EQ(j.at("host_groups").at("groups").at(0).at("winner"), "eager_threshold=4KiB");
  EXPECT_EQ(j.at("host_groups").at("groups").at(1).at("winner"), "eager_threshold=64KiB");
  ASSERT_EQ(j.at("failed").size(), 1u);
  EXPECT_EQ(j.at("failed").at(0).at("error"), "peer 10.0.0.5:40000 did not answer");
}

TEST_F(ClusterCliTest, GeomeanGoalPicksAnotherWinner) {
  const Outcome shown = Run("results --cluster 1 --goal geomean --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const json j = json::parse(shown.out);
  EXPECT_EQ(j.at("cluster_goal"), "geomean");
  EXPECT_EQ(j.at("winner").at("knobs"), "eager_threshold=64KiB");
  EXPECT_NEAR(j.at("winner").at("score").get<double>(), std::pow(359424.0, 1.0 / 6), 1e-9);
  const Outcome refused = Run("results --cluster 1 --goal fastest");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  const Outcome alone = Run("results --goal geomean");  // a goal for no cluster
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
}

TEST_F(ClusterCliTest, ALinksSweepNamesItsCluster) {
  const Outcome shown = Run("results --sweep 4");  // b -> d
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("Cluster       this sweep measured one link of cluster 1 "
                           "(`artune results --cluster 1`)"),
            std::string::npos)
      << shown.out;
  const Outcome as_json = Run("results --sweep 4 --json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out).at("cluster_id"), 1);
}

TEST_F(ClusterCliTest, MissingClusterSaysSo) {
  const Outcome missing = Run("results --cluster 9");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cluster"), std::string::npos) << missing.err;
}

TEST_F(ClusterCliTest, ApplyWritesOneConfigPerHostGroup) {
  const std::string base = dir_ + "/cluster.toml";
  const Outcome applied = Run("apply config --cluster 1 --output " + base);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  const std::string mlx5 = ReadAll(dir_ + "/cluster.mlx5.toml");
  const std::string rxe = ReadAll(dir_ + "/cluster.rxe.toml");
  EXPECT_NE(mlx5.find("eager_threshold = \"4KiB\""), std::string::npos) << mlx5;
  EXPECT_NE(mlx5.find("# for hosts a, b (mlx5)"), std::string::npos) << mlx5;
  EXPECT_NE(rxe.find("eager_threshold = \"64KiB\""), std::string::npos) << rxe;
  EXPECT_NE(rxe.find("# for hosts c, d, e (rxe)"), std::string::npos) << rxe;
  EXPECT_FALSE(fs::exists(base)) << "one file per group, not the base file";
  EXPECT_NE(applied.err.find("wrote 2 configs, " + dir_ + "/cluster.mlx5.toml (for a, b); " + dir_ +
                             "/cluster.rxe.toml (for c, d, e)"),
            std::string::npos)
      << applied.err;
  EXPECT_NE(applied.err.find("the hosts have different devices"), std::string::npos);
}

TEST_F(ClusterCliTest, ApplyGroupsToStdoutOnlyAsJson) {
  const Outcome toml = Run("apply config --cluster 1 --format toml");
  EXPECT_EQ(toml.exit_code, 2) << toml.err;
  EXPECT_NE(toml.err.find("would override each other"), std::string::npos) << toml.err;
  const Outcome printed = Run("apply config --cluster 1 --format json");
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const json j = json::parse(printed.out);
  ASSERT_EQ(j.at("groups").size(), 2u);
  EXPECT_EQ(j.at("groups").at(0).at("hosts"), json({"a", "b"}));
  EXPECT_EQ(j.at("groups").at(0).at("config").at("eager_threshold"), 4096);
  EXPECT_EQ(j.at("groups").at(1).at("config").at("eager_threshold"), 65536);
  const Outcome live = Run("apply config --cluster 1 --live 127.0.0.1:1");
  EXPECT_EQ(live.exit_code, 2) << live.err;
}

TEST_F(ClusterCliTest, ApplyOneModelClusterWritesItsWinner) {
  const std::string path = dir_ + "/ring.toml";
  const Outcome applied = Run("apply config --cluster 2 --output " + path + " --json");
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  const std::string written = ReadAll(path);
  EXPECT_NE(written.find("eager_threshold = \"4KiB\""), std::string::npos) << written;
  EXPECT_NE(written.find("# cluster 2 winner by worst-link for every host"), std::string::npos)
      << written;
  const json j = json::parse(applied.out);
  EXPECT_EQ(j.at("cluster_id"), 2);
  EXPECT_EQ(j.at("winner").at("chosen_by"), "cluster");
  EXPECT_EQ(j.at("winner").at("knobs"), "eager_threshold=4KiB");
  const Outcome both = Run("apply config --cluster 2 --sweep 1");
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

TEST_F(ClusterCliTest, ReportDrawsTheClusterHeatmap) {
  const std::string path = dir_ + "/cluster.html";
  const Outcome reported = Run("report --cluster 1 --output " + path);
  ASSERT_EQ(reported.exit_code, 0) << reported.err;
  EXPECT_NE(reported.out.find("the cluster 1 report"), std::string::npos) << reported.out;
  const std::string html = ReadAll(path);
  EXPECT_NE(html.find("<h1>artune cluster 1</h1>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("b to d: workload-time 16 — outlier</title>"), std::string::npos);
  EXPECT_NE(html.find("d to e: failed</title>"), std::string::npos);
  EXPECT_NE(html.find("Look at the link b ↔ d: 10.8 MAD slower than the median under the winner"),
            std::string::npos);
  EXPECT_NE(html.find("Host groups"), std::string::npos);
  EXPECT_NE(html.find("peer 10.0.0.5:40000 did not answer"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

// A stored model run (cluster_model_fixture.h): 5 links, q -> s 20x slower per byte,
// p -> s failed.
class ModelClusterCliTest : public ApplyCliTest {
 protected:
  void SetUp() override {
    ApplyCliTest::SetUp();
    auto opened = artune::db::Store::Open(StorePath());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto id = artune_cluster_test::WriteLinkModelCluster(**opened);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ASSERT_EQ(*id, 1);
    const Outcome as_json = Run("results --cluster 1 --json");
    ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
    run_ = json::parse(as_json.out);
  }
  json run_;  // `results --cluster 1 --json`: what the other views must agree with
};

TEST_F(ModelClusterCliTest, ResultsJsonCarriesEachLinksModelPredictionAndTheOutlier) {
  ASSERT_EQ(run_.at("links").size(), 5u);
  EXPECT_EQ(run_.at("usable_links"), 4);
  const json& slow = run_.at("links").at(3);
  EXPECT_EQ(slow.at("client_host"), "q");
  EXPECT_TRUE(slow.at("outlier").get<bool>());
  // The slow link's bytes cost 20x: its per-byte term, not its per-call one.
  EXPECT_NEAR(
      slow.at("per_byte_s").get<double>() / run_.at("links").at(0).at("per_byte_s").get<double>(),
      20, 1);
  EXPECT_NEAR(
      slow.at("per_call_s").get<double>() / run_.at("links").at(0).at("per_call_s").get<double>(),
      1, 0.2);
  for (const char* field : {"model_id", "best", "best_s", "default_s", "per_call_s"}) {
    EXPECT_FALSE(slow.at(field).is_null()) << field;
    EXPECT_TRUE(run_.at("links").at(4).at(field).is_null()) << field;  // the failed link
  }
  EXPECT_EQ(run_.at("links").at(4).at("error"), "peer 10.0.0.4:40000 did not answer");
  EXPECT_FALSE(run_.at("cluster_best").at("knobs").get<std::string>().empty());
  ASSERT_EQ(run_.at("outliers").size(), 1u);
  const json& outlier = run_.at("outliers").at(0);
  EXPECT_EQ(outlier.at("term"), "per-byte");
  EXPECT_NEAR(outlier.at("ratio").get<double>(), 20, 1);
  EXPECT_NE(run_.at("outlier_rule").get<std::string>().find("scaled MAD"), std::string::npos);
}

TEST_F(ModelClusterCliTest, ResultsTextShowsTheModelsPredictionsAndTheOutlierFigures) {
  const Outcome shown = Run("results --cluster 1");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const std::string& out = shown.out;
  EXPECT_NE(out.find("measurement model (link models), 5 links (4 with a model)"),
            std::string::npos)
      << out;
  for (const char* column : {"MODEL", "PREDICTED BEST", "BEST MS", "PER CALL MS", "MS PER MIB"}) {
    EXPECT_NE(out.find(column), std::string::npos) << column << "\n" << out;
  }
  EXPECT_NE(out.find("outlier: per-byte"), std::string::npos) << out;
  EXPECT_NE(out.find("Cluster  " + artune::tuner::KnobKeyText(
                                       run_.at("cluster_best").at("knobs").get<std::string>())),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("look at the link q ↔ s: per-byte cost"), std::string::npos) << out;
}

TEST_F(ModelClusterCliTest, ReportShowsTheModelsPredictionsNotAMissingWinner) {
  const std::string path = dir_ + "/model-cluster.html";
  const Outcome reported = Run("report --cluster 1 --output " + path);
  ASSERT_EQ(reported.exit_code, 0) << reported.err;
  const std::string html = ReadAll(path);
  EXPECT_EQ(html.find("No winner"), std::string::npos) << html;
  EXPECT_NE(html.find("Cluster&#39;s predicted best"), std::string::npos) << html;
  // The cluster's best, as `results --cluster --json` has it, in the report's words.
  auto knobs =
      artune::db::ParseTrialKnobKey(run_.at("cluster_best").at("knobs").get<std::string>());
  ASSERT_TRUE(knobs.ok()) << knobs.status().ToString();
  std::string best;
  for (const auto& [name, value] : *knobs) best += (best.empty() ? "" : ", ") + name + "=" + value;
  EXPECT_NE(html.find("Predicted best: " + best), std::string::npos) << html;
  // The outlier with the rule's figures, and the slow link's cell marked.
  EXPECT_NE(html.find("look at the link q ↔ s: per-byte cost"), std::string::npos) << html;
  EXPECT_NE(html.find("q to s: "), std::string::npos) << html;
  EXPECT_NE(html.find("— outlier, per-byte</title>"), std::string::npos) << html;
  // Every link with its model and costs; the failed one with its error.
  EXPECT_NE(html.find(">per MiB</th>"), std::string::npos) << html;
  EXPECT_NE(html.find("peer 10.0.0.4:40000 did not answer"), std::string::npos) << html;
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
