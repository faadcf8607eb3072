// HomeSource over a real store file holding a model cluster run
// (tests/cli/cluster_model_fixture.h): the home view lists it with the cluster's
// predicted best and its outlier with the rule's figures, as `artune results
// --cluster ID` has them, not as a cluster without a winner.
#include "home_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "../cli/cluster_model_fixture.h"
#include "artune/cluster/cluster_model.h"
#include "store_file_test.h"
#include "views.h"

namespace artune::dashboard {
namespace {

class HomeSourceTest : public StoreFileTest {};

TEST_F(HomeSourceTest, AModelRunShowsItsPredictedBestAndItsOutlier) {
  tuner::ClusterModelData expected;
  {
    auto store = db::Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto id = artune_cluster_test::WriteLinkModelCluster(**store);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    auto data = tuner::ReadClusterModels(**store, *id);
    ASSERT_TRUE(data.ok()) << data.status().ToString();
    expected = std::move(*data);
  }
  HomeSource source(path_, 5);
  const HomePanel panel = source.Poll();
  ASSERT_TRUE(panel.error.empty()) << panel.error;
  ASSERT_EQ(panel.clusters.size(), 1u);
  const ClusterLine& line = panel.clusters[0];
  EXPECT_TRUE(line.error.empty()) << line.error;
  EXPECT_TRUE(line.predicted);
  EXPECT_EQ(line.links, 5u);
  EXPECT_EQ(line.usable, 4u);
  ASSERT_FALSE(expected.prediction.ranked.empty());
  EXPECT_NEAR(line.best_ms, expected.prediction.ranked.front().seconds * 1e3, 1e-9);
  EXPECT_NEAR(line.margin, expected.prediction.margin, 1e-12);
  auto knobs = db::ParseTrialKnobKey(expected.prediction.ranked.front().key);
  ASSERT_TRUE(knobs.ok());
  for (const auto& [name, value] : *knobs) {
    EXPECT_NE(line.best.find(name + "=" + value), std::string::npos) << line.best;
  }
  ASSERT_EQ(line.outliers.size(), 1u);
  EXPECT_EQ(line.outliers[0].rfind("q-s per-byte ", 0), 0u) << line.outliers[0];
  EXPECT_NE(line.outliers[0].find("x median, "), std::string::npos) << line.outliers[0];

  Frame frame;
  frame.home = panel;
  UiState ui;
  ui.view = View::kHome;
  Canvas canvas(100, 30);
  DrawScreen(frame, ui, canvas);
  const std::string text = canvas.Text();
  EXPECT_NE(text.find("Cluster runs (1)"), std::string::npos) << text;
  EXPECT_NE(text.find("4 ranks all       model  4/5  predicted "), std::string::npos) << text;
  EXPECT_NE(text.find("! outlier q-s per-byte"), std::string::npos) << text;
  EXPECT_EQ(text.find("no winner"), std::string::npos) << text;
}

}  // namespace
}  // namespace artune::dashboard
