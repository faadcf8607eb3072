// The sweep view's cluster panel: read from a store holding a synthetic cluster
// run (tests/cli/cluster_fixture.h), the panel marks the sweep's own link, the
// outlier and the failed link, and the view draws it beside the sweep's heatmap,
// below it, or as one line when neither fits.
#include <gtest/gtest.h>

#include <filesystem>

#include "../cli/cluster_fixture.h"
#include "cluster_model.h"
#include "store_file_test.h"
#include "sweep_source.h"
#include "views.h"

namespace artune::dashboard {
namespace {

class ClusterPanelTest : public StoreFileTest {
 protected:
  void SetUp() override {
    StoreFileTest::SetUp();
    auto store = db::Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    auto cluster = artune_cluster_test::WriteTwoModelCluster(*store_);
    ASSERT_TRUE(cluster.ok()) << cluster.status().message();
    auto data = tuner::ReadClusterData(*store_, *cluster);
    ASSERT_TRUE(data.ok()) << data.status().message();
    data_ = std::move(*data);
    analysis_ = tuner::AnalyzeCluster(data_.input);
  }

  // The sweep id of the link from `client` to `server`.
  int64_t SweepOf(const std::string& client, const std::string& server) const {
    for (const db::ClusterLinkRecord& link : data_.links) {
      if (link.client_host == client && link.server_host == server) return link.sweep_id;
    }
    ADD_FAILURE() << "no link " << client << " -> " << server;
    return 0;
  }

  std::unique_ptr<db::Store> store_;
  tuner::ClusterData data_;
  tuner::ClusterAnalysis analysis_;
};

TEST_F(ClusterPanelTest, MarksThisLinkTheOutlierAndTheFailedLink) {
  const std::optional<ClusterPanel> panel =
      ClusterPanelForSweep(data_, analysis_, SweepOf("b", "d"));
  ASSERT_TRUE(panel);
  EXPECT_EQ(panel->cluster_id, 1);
  EXPECT_EQ(panel->link, "b -> d");
  EXPECT_EQ(panel->config, "eager_threshold=4KiB");
  EXPECT_TRUE(panel->under_winner);
  ASSERT_EQ(panel->hosts, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  const ClusterHeatCell& slow = panel->cells[1][3];
  EXPECT_TRUE(slow.this_link);
  EXPECT_TRUE(slow.outlier);
  EXPECT_DOUBLE_EQ(slow.objective, 16);
  EXPECT_EQ(slow.level, 0);                // the worst cell
  EXPECT_EQ(panel->cells[0][1].level, 4);  // a -> b at 5, the best
  EXPECT_FALSE(panel->cells[0][1].this_link);
  EXPECT_TRUE(panel->cells[3][4].failed);  // d -> e
  EXPECT_FALSE(panel->cells[3][4].usable);
  EXPECT_FALSE(panel->cells[1][0].linked);
  EXPECT_EQ(panel->outliers, (std::vector<std::string>{"b-d 10.8 MAD slower"}));
  EXPECT_EQ(panel->failed, 1u);
}

TEST_F(ClusterPanelTest, ASweepOfNoLinkHasNoPanel) {
  EXPECT_FALSE(ClusterPanelForSweep(data_, analysis_, 999));
  EXPECT_FALSE(ClusterPanelForSweep(data_, analysis_, 0));  // the failed link's "no sweep"
}

TEST_F(ClusterPanelTest, SweepSourceFindsTheClusterOfTheSweepShown) {
  SweepSource linked(path_, SweepSelector{SweepOf("a", "b")});
  const SweepPanel panel = linked.Poll();
  ASSERT_TRUE(panel.summary) << panel.error;
  ASSERT_TRUE(panel.cluster);
  EXPECT_EQ(panel.cluster->link, "a -> b");
  EXPECT_TRUE(panel.cluster->cells[0][1].this_link);
  // A sweep of its own (not a link) gets no panel.
  db::SweepRecord sweep = *data_.sweeps[0];
  const auto alone = store_->InsertSweep(sweep);
  ASSERT_TRUE(alone.ok());
  SweepSource standalone(path_, SweepSelector{*alone});
  const SweepPanel other = standalone.Poll();
  ASSERT_TRUE(other.summary) << other.error;
  EXPECT_FALSE(other.cluster);
}

TEST_F(ClusterPanelTest, AClusterIsReadAgainWhenItsLinksChange) {
  db::ClusterRecord running;
  running.ranks = 3;
  running.pairs = "ring";
  running.measurement = "sweep";
  const auto cluster_id = store_->InsertCluster(running);
  ASSERT_TRUE(cluster_id.ok());
  const std::map<std::string, double> values = {{"4KiB", 7}, {"16KiB", 10}};
  const auto link = [&](uint32_t round, uint32_t client, uint32_t server, bool ok = true) {
    const auto sweep = artune_cluster_test::WriteLinkSweep(*store_, "p" + std::to_string(client),
                                                           "p" + std::to_string(server), values);
    EXPECT_TRUE(sweep.ok());
    db::ClusterLinkRecord record;
    record.cluster_id = *cluster_id;
    record.round = round;
    record.client_rank = client;
    record.server_rank = server;
    record.client_host = "p" + std::to_string(client);
    record.server_host = "p" + std::to_string(server);
    record.status = ok ? db::LinkStatus::kOk : db::LinkStatus::kFailed;
    record.error = ok ? "" : "peer did not answer";
    record.sweep_id = ok ? *sweep : 0;
    EXPECT_TRUE(store_->InsertClusterLink(record).ok());
    return *sweep;
  };
  const int64_t first = link(0, 0, 1);
  SweepSource source(path_, SweepSelector{first});
  SweepPanel panel = source.Poll();
  ASSERT_TRUE(panel.cluster);
  EXPECT_EQ(panel.cluster->links, 1u);
  EXPECT_EQ(panel.cluster->hosts, (std::vector<std::string>{"p0", "p1"}));
  link(1, 1, 2);
  panel = source.Poll();
  ASSERT_TRUE(panel.cluster);
  EXPECT_EQ(panel.cluster->links, 2u);
  EXPECT_EQ(panel.cluster->hosts, (std::vector<std::string>{"p0", "p1", "p2"}));
  // p2 -> p0 fails and the run finishes; --resume measures it again, replacing it.
  link(2, 2, 0, false);
  ASSERT_TRUE(store_->FinishCluster(*cluster_id).ok());
  panel = source.Poll();
  ASSERT_TRUE(panel.cluster);
  EXPECT_TRUE(panel.cluster->cells[2][0].failed);
  link(2, 2, 0);
  panel = source.Poll();
  ASSERT_TRUE(panel.cluster);
  EXPECT_FALSE(panel.cluster->cells[2][0].failed);
  EXPECT_TRUE(panel.cluster->cells[2][0].usable);
}

SweepPanel PanelWithCluster(const ClusterPanel& cluster) {
  SweepPanel panel;
  panel.configured = true;
  SweepSummary summary;
  summary.id = 4;
  summary.objective = "workload-time";
  summary.goal = "min";
  summary.finished = true;
  summary.eager_values = {"4KiB", "16KiB", "64KiB"};
  summary.chunk_values = {"?"};
  summary.cells.assign(3, std::vector<HeatCell>(1));
  panel.summary = summary;
  panel.cluster = cluster;
  return panel;
}

TEST_F(ClusterPanelTest, ViewDrawsThePanelBesideTheSweepHeatmap) {
  const auto cluster = ClusterPanelForSweep(data_, analysis_, SweepOf("b", "d"));
  ASSERT_TRUE(cluster);
  Canvas canvas(80, 24);
  DrawSweepView(PanelWithCluster(*cluster), canvas);
  const std::string text = canvas.Text();
  EXPECT_NE(text.find("cluster 1, link b -> d; winner eager_threshold=4KiB"), std::string::npos)
      << text;
  // Row b: b -> c 8.00, b -> d this link (">" cut, 16.00!), the rest unlinked.
  EXPECT_NE(text.find("b           .      .   8.00 16.00!      ."), std::string::npos) << text;
  EXPECT_NE(text.find("d           .      .      .      .      x"), std::string::npos) << text;
  EXPECT_NE(text.find("! b-d 10.8 MAD slower"), std::string::npos) << text;
  // Beside the sweep heatmap: the cluster's title shares no row with the view's top.
  const int title_row = 8;
  EXPECT_NE(canvas.RowText(title_row).find("cluster 1"), std::string::npos) << text;
  EXPECT_EQ(canvas.StyleAt(title_row + 3, canvas.RowText(title_row + 3).size() - 8),
            Style::kBest);  // b -> d, this link
}

TEST_F(ClusterPanelTest, ViewSaysSoWhenThePanelDoesNotFit) {
  auto cluster = ClusterPanelForSweep(data_, analysis_, SweepOf("b", "d"));
  ASSERT_TRUE(cluster);
  for (int i = 0; i < 8; ++i) cluster->hosts.push_back("extra" + std::to_string(i));
  cluster->cells.assign(cluster->hosts.size(), std::vector<ClusterHeatCell>(cluster->hosts.size()));
  Canvas canvas(80, 24);
  DrawSweepView(PanelWithCluster(*cluster), canvas);
  EXPECT_NE(canvas.RowText(22).find("cluster 1, link b -> d: its heatmap needs a larger terminal"),
            std::string::npos)
      << canvas.Text();
  EXPECT_EQ(canvas.Text().find("MAD slower"), std::string::npos);

  // Past tuner::kMatrixMaxHosts the analysis draws no grid: the line says why.
  cluster->hosts.clear();
  cluster->cells.clear();
  cluster->omitted_hosts = 4096;
  Canvas large(80, 24);
  DrawSweepView(PanelWithCluster(*cluster), large);
  EXPECT_NE(large.RowText(22).find("cluster 1, link b -> d: 4096 hosts, too many for a heatmap"),
            std::string::npos)
      << large.Text();
}

}  // namespace
}  // namespace artune::dashboard
