#include "artune/cluster/cluster_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

namespace artune::tuner {
namespace {

constexpr const char* kDefault = "eager_threshold=16KiB";
constexpr const char* kX = "eager_threshold=4KiB";
constexpr const char* kY = "eager_threshold=64KiB";

LinkInput Link(const std::string& client, const std::string& server,
               std::map<std::string, double> objectives, const std::string& client_device = "",
               const std::string& server_device = "") {
  LinkInput link;
  link.client = {client, client_device};
  link.server = {server, server_device};
  link.ok = true;
  link.objectives = std::move(objectives);
  return link;
}

LinkInput FailedLink(const std::string& client, const std::string& server) {
  LinkInput link;
  link.client = {client, ""};
  link.server = {server, ""};
  link.error = "peer unreachable";
  return link;
}

// Four hosts, every pair one link. X is never worse than 8, Y is faster on most
// links but 12 on c->d: the goals disagree (worst-link X, geomean Y).
ClusterInput FourHosts() {
  ClusterInput input;
  input.default_key = kDefault;
  input.links = {
      Link("a", "b", {{kDefault, 10}, {kX, 8}, {kY, 7}}),
      Link("a", "c", {{kDefault, 10}, {kX, 8}, {kY, 9}}),
      Link("a", "d", {{kDefault, 10}, {kX, 8}, {kY, 7}}),
      Link("b", "c", {{kDefault, 10}, {kX, 8}, {kY, 7}}),
      Link("b", "d", {{kDefault, 10}, {kX, 8}, {kY, 7}}),
      Link("c", "d", {{kDefault, 10}, {kX, 8}, {kY, 12}}),
  };
  return input;
}

TEST(ClusterAnalysisTest, WorstLinkPicksTheBestWorstCase) {
  const ClusterAnalysis analysis = AnalyzeCluster(FourHosts());
  ASSERT_TRUE(analysis.winner.winner);
  EXPECT_EQ(analysis.winner.winner->key, kX);
  EXPECT_DOUBLE_EQ(analysis.winner.winner->score, 8);
  ASSERT_EQ(analysis.winner.candidates.size(), 3u);
  // Best first: X (8), the default (10), Y (12, on c->d, link 5).
  EXPECT_EQ(analysis.winner.candidates[1].key, kDefault);
  EXPECT_EQ(analysis.winner.candidates[2].key, kY);
  EXPECT_DOUBLE_EQ(analysis.winner.candidates[2].worst, 12);
  EXPECT_EQ(analysis.winner.candidates[2].worst_link, 5u);
  ASSERT_TRUE(analysis.winner.default_score);
  EXPECT_DOUBLE_EQ(analysis.winner.default_score->score, 10);
  EXPECT_EQ(analysis.usable_links, 6u);
  EXPECT_EQ(analysis.failed_links, 0u);
}

TEST(ClusterAnalysisTest, GeomeanPicksTheBestTypicalLink) {
  ClusterInput input = FourHosts();
  input.cluster_goal = ClusterGoal::kGeomean;
  const ClusterAnalysis analysis = AnalyzeCluster(input);
  ASSERT_TRUE(analysis.winner.winner);
  // Y: (7^4 * 9 * 12)^(1/6) = 259308^(1/6) < 8 = 262144^(1/6).
  EXPECT_EQ(analysis.winner.winner->key, kY);
  EXPECT_NEAR(analysis.winner.winner->score, std::pow(259308.0, 1.0 / 6), 1e-9);
  EXPECT_LT(analysis.winner.winner->score, 8);
}

TEST(ClusterAnalysisTest, MaximisedObjectiveTurnsTheComparisons) {
  ClusterInput input;
  input.goal = ObjectiveGoal::kMax;
  input.default_key = kDefault;
  input.links = {Link("a", "b", {{kDefault, 100}, {kX, 150}, {kY, 300}}),
                 Link("b", "c", {{kDefault, 100}, {kX, 140}, {kY, 90}})};
  ClusterAnalysis analysis = AnalyzeCluster(input);
  ASSERT_TRUE(analysis.winner.winner);
  EXPECT_EQ(analysis.winner.winner->key, kX);  // worst 140 beats the default's 100, Y's 90
  EXPECT_DOUBLE_EQ(analysis.winner.winner->worst, 140);
  EXPECT_EQ(analysis.winner.winner->worst_link, 1u);
  // Link 0's best is Y at 300: three times the default.
  EXPECT_EQ(analysis.rows[0].best_key, kY);
  ASSERT_TRUE(analysis.rows[0].gain);
  EXPECT_DOUBLE_EQ(*analysis.rows[0].gain, 3.0);
  input.cluster_goal = ClusterGoal::kGeomean;
  analysis = AnalyzeCluster(input);
  EXPECT_EQ(analysis.winner.winner->key, kY);  // sqrt(300 * 90) = 164 > sqrt(150 * 140) = 145
}

TEST(ClusterAnalysisTest, RowsShowEachLinksBestTheDefaultAndTheWinner) {
  const ClusterAnalysis analysis = AnalyzeCluster(FourHosts());
  ASSERT_EQ(analysis.rows.size(), 6u);
  const LinkRow& first = analysis.rows[0];
  EXPECT_EQ(first.link, 0u);
  EXPECT_EQ(first.best_key, kY);
  EXPECT_DOUBLE_EQ(first.best_objective, 7);
  EXPECT_DOUBLE_EQ(*first.default_objective, 10);
  EXPECT_DOUBLE_EQ(*first.gain, 10.0 / 7);
  EXPECT_DOUBLE_EQ(*first.winner_objective, 8);
  EXPECT_EQ(analysis.rows[5].best_key, kX);
  EXPECT_DOUBLE_EQ(*analysis.rows[5].gain, 10.0 / 8);
}

TEST(ClusterAnalysisTest, ALinksOwnChoiceIsItsBest) {
  ClusterInput input = FourHosts();
  input.links[0].chosen = kX;  // its final re-measurement chose X over Y's 7
  EXPECT_EQ(AnalyzeCluster(input).rows[0].best_key, kX);
  input.links[0].chosen = "eager_threshold=1MiB";  // not measured: ignored
  EXPECT_EQ(AnalyzeCluster(input).rows[0].best_key, kY);
}

TEST(ClusterAnalysisTest, FailedLinksAreLeftOutOfTheWinnerButShownInTheMatrix) {
  ClusterInput input = FourHosts();
  input.links.push_back(FailedLink("d", "a"));
  const ClusterAnalysis analysis = AnalyzeCluster(input);
  EXPECT_EQ(analysis.failed_links, 1u);
  EXPECT_EQ(analysis.usable_links, 6u);
  EXPECT_EQ(analysis.winner.winner->key, kX);
  EXPECT_TRUE(analysis.rows[6].best_key.empty());
  const HostMatrix& matrix = analysis.matrix;
  ASSERT_EQ(matrix.hosts, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(matrix.cells[3][0].failed);
  EXPECT_FALSE(matrix.cells[3][0].value);
  EXPECT_EQ(matrix.cells[3][0].links, 1u);
}

TEST(ClusterAnalysisTest, MatrixShowsTheWinnerPerClientAndServerHost) {
  const ClusterAnalysis analysis = AnalyzeCluster(FourHosts());
  const HostMatrix& matrix = analysis.matrix;
  EXPECT_EQ(matrix.config_key, kX);
  EXPECT_TRUE(matrix.is_winner);
  ASSERT_EQ(matrix.cells.size(), 4u);
  EXPECT_DOUBLE_EQ(*matrix.cells[0][1].value, 8);  // a -> b
  EXPECT_FALSE(matrix.cells[1][0].value);          // b -> a was not a link
  EXPECT_EQ(matrix.cells[1][0].links, 0u);
  EXPECT_FALSE(matrix.cells[0][0].value);
}

TEST(ClusterAnalysisTest, MatrixKeepsTheWorstOfLinksSharingACell) {
  ClusterInput input;
  input.default_key = kDefault;
  input.links = {Link("a", "b", {{kDefault, 10}}), Link("a", "b", {{kDefault, 14}})};
  const HostMatrix matrix = AnalyzeCluster(input).matrix;
  EXPECT_DOUBLE_EQ(*matrix.cells[0][1].value, 14);
  EXPECT_EQ(matrix.cells[0][1].links, 2u);
}

TEST(ClusterAnalysisTest, ALargeClusterHasNoMatrixButItsOutliers) {
  // A ring over kMatrixMaxHosts + 1 hosts, one link slow.
  ClusterInput input;
  input.default_key = kDefault;
  const size_t hosts = kMatrixMaxHosts + 1;
  for (size_t i = 0; i < hosts; ++i) {
    input.links.push_back(Link("h" + std::to_string(i), "h" + std::to_string((i + 1) % hosts),
                               {{kDefault, i == 7 ? 30.0 : 10.0}}));
  }
  const ClusterAnalysis analysis = AnalyzeCluster(input);
  EXPECT_TRUE(analysis.matrix.hosts.empty());
  EXPECT_TRUE(analysis.matrix.cells.empty());
  EXPECT_EQ(analysis.matrix.omitted_hosts, hosts);
  EXPECT_EQ(analysis.matrix.config_key, kDefault);
  ASSERT_EQ(analysis.outliers.size(), 1u);
  EXPECT_EQ(analysis.outliers[0].link, 7u);
  input.links.resize(hosts - 2);  // a chain over kMatrixMaxHosts hosts: drawn
  EXPECT_EQ(AnalyzeCluster(input).matrix.hosts.size(), kMatrixMaxHosts);
}

TEST(ClusterAnalysisTest, NoCommonConfigMeansNoWinnerAndTheDefaultsMatrix) {
  ClusterInput input;
  input.default_key = kDefault;
  input.links = {Link("a", "b", {{kDefault, 10}, {kX, 8}}), Link("b", "c", {{kY, 9}}),
                 Link("c", "a", {{kDefault, 11}})};
  const ClusterAnalysis analysis = AnalyzeCluster(input);
  EXPECT_FALSE(analysis.winner.winner);
  EXPECT_NE(analysis.winner.reason.find("no config was measured"), std::string::npos)
      << analysis.winner.reason;
  EXPECT_EQ(analysis.matrix.config_key, kDefault);
  EXPECT_FALSE(analysis.matrix.is_winner);
  EXPECT_DOUBLE_EQ(*analysis.matrix.cells[2][0].value, 11);  // c -> a
  EXPECT_FALSE(analysis.matrix.cells[1][2].value);           // b -> c: no default there
}

TEST(ClusterAnalysisTest, NoUsableLinkMeansNoWinner) {
  ClusterInput input;
  input.links = {FailedLink("a", "b"), Link("b", "c", {})};
  const ClusterAnalysis analysis = AnalyzeCluster(input);
  EXPECT_FALSE(analysis.winner.winner);
  EXPECT_EQ(analysis.usable_links, 0u);
  EXPECT_EQ(analysis.failed_links, 1u);
  EXPECT_TRUE(analysis.outliers.empty());
}

TEST(ClusterAnalysisTest, TiesGoToTheDefaultThenKeyOrder) {
  ClusterInput input;
  input.default_key = kY;
  input.links = {Link("a", "b", {{kX, 8}, {kY, 8}, {kDefault, 8}})};
  EXPECT_EQ(AnalyzeCluster(input).winner.winner->key, kY);
  EXPECT_EQ(AnalyzeCluster(input).rows[0].best_key, kY);
  input.default_key = "";
  // Key order: "eager_threshold=16KiB" < "eager_threshold=4KiB" < "...=64KiB".
  EXPECT_EQ(AnalyzeCluster(input).winner.winner->key, kDefault);
}

TEST(ClusterAnalysisTest, GeomeanSkipsConfigsWithNonPositiveValues) {
  ClusterInput input;
  input.cluster_goal = ClusterGoal::kGeomean;
  input.links = {Link("a", "b", {{kX, 0}, {kY, 5}}), Link("b", "c", {{kX, 1}, {kY, 5}})};
  const ClusterWinner winner = AnalyzeCluster(input).winner;
  ASSERT_EQ(winner.candidates.size(), 1u);
  EXPECT_EQ(winner.winner->key, kY);
}

// ---- outliers ---------------------------------------------------------------

ClusterInput UnderOneConfig(const std::vector<double>& values,
                            ObjectiveGoal goal = ObjectiveGoal::kMin) {
  ClusterInput input;
  input.goal = goal;
  input.default_key = kDefault;
  for (size_t i = 0; i < values.size(); ++i) {
    input.links.push_back(
        Link("h" + std::to_string(i), "h" + std::to_string(i + 1), {{kDefault, values[i]}}));
  }
  return input;
}

TEST(ClusterAnalysisTest, ASlowLinkIsAnOutlierBeyondTheRelativeFloor) {
  // Median 8.05, MAD 0.1 under the floor 0.05 x 8.05 = 0.4025: 12 is
  // (12 - 8.05) / 0.4025 = 9.81 scales away, 8.2 only 0.37.
  const std::vector<Outlier> outliers =
      FindOutliers(UnderOneConfig({8, 8.1, 7.9, 8, 8.2, 12}), kDefault);
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_EQ(outliers[0].link, 5u);
  EXPECT_DOUBLE_EQ(outliers[0].median, 8.05);
  EXPECT_DOUBLE_EQ(outliers[0].scale, 0.05 * 8.05);
  EXPECT_NEAR(outliers[0].deviations, 3.95 / 0.4025, 1e-9);
}

TEST(ClusterAnalysisTest, OutliersAreMoreThanThreeScaledMadsAway) {
  // Median 15; deviations 5, 3, 1, 1, 3, 13: MAD 3, scaled 4.4478 (above the floor
  // 0.75). 28 is 13 / 4.4478 = 2.92 scaled MADs away: not an outlier, though it is
  // 4.3 raw MADs away.
  EXPECT_TRUE(FindOutliers(UnderOneConfig({10, 12, 14, 16, 18, 28}), kDefault).empty());
  // 30: deviations 1, 1, 3, 3, 5, 15, MAD 3, 15 / 4.4478 = 3.37.
  const std::vector<Outlier> outliers =
      FindOutliers(UnderOneConfig({10, 12, 14, 16, 18, 30}), kDefault);
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_DOUBLE_EQ(outliers[0].scale, 3 * kMadToSigma);
  EXPECT_NEAR(outliers[0].deviations, 15 / (3 * kMadToSigma), 1e-12);
}

TEST(ClusterAnalysisTest, NoisyIdenticalLinksAreNotOutliers) {
  // The first real run: four ranks on one machine, six alike links, latency-p50 in
  // microseconds from short trials. 263.53 is 40.9 above the median 222.6 with a MAD
  // of 13.5: 3.03 raw MADs, but only 2.04 scaled ones.
  EXPECT_TRUE(
      FindOutliers(UnderOneConfig({232.43, 231.09, 214.12, 205.43, 176.31, 263.53}), kDefault)
          .empty());
}

TEST(ClusterAnalysisTest, IdenticalLinksHaveNoOutlierAndZeroMadUsesTheFloor) {
  EXPECT_TRUE(FindOutliers(UnderOneConfig({8, 8, 8, 8, 8, 8}), kDefault).empty());
  // MAD 0; 8.8 is 10 % worse: 0.8 / 0.4 = 2 floors, not an outlier; 9.6 (20 %) is.
  EXPECT_TRUE(FindOutliers(UnderOneConfig({8, 8, 8, 8, 8, 8.8}), kDefault).empty());
  const auto outliers = FindOutliers(UnderOneConfig({8, 8, 8, 8, 8, 9.6}), kDefault);
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_NEAR(outliers[0].deviations, 4.0, 1e-9);
}

TEST(ClusterAnalysisTest, OnlyTheGoalsBadDirectionStandsOut) {
  EXPECT_TRUE(FindOutliers(UnderOneConfig({8, 8, 8, 8, 8, 4}), kDefault).empty());
  const auto faster =
      FindOutliers(UnderOneConfig({100, 100, 100, 100, 100, 150}, ObjectiveGoal::kMax), kDefault);
  EXPECT_TRUE(faster.empty());
  const auto slower =
      FindOutliers(UnderOneConfig({100, 100, 100, 100, 100, 50}, ObjectiveGoal::kMax), kDefault);
  ASSERT_EQ(slower.size(), 1u);
  EXPECT_EQ(slower[0].link, 5u);
  EXPECT_NEAR(slower[0].deviations, 10, 1e-9);
}

TEST(ClusterAnalysisTest, TooFewLinksHaveNoOutliers) {
  EXPECT_TRUE(FindOutliers(UnderOneConfig({8, 80}), kDefault).empty());
  EXPECT_EQ(FindOutliers(UnderOneConfig({8, 8, 80}), kDefault).size(), 1u);
}

TEST(ClusterAnalysisTest, AnalysisFlagsOutliersUnderTheWinnerInTheMatrix) {
  ClusterInput input = FourHosts();
  // b -> c is slow under every config, least under X: X still has the best worst link.
  input.links[3].objectives = {{kDefault, 22}, {kX, 20}, {kY, 21}};
  const ClusterAnalysis analysis = AnalyzeCluster(input);
  ASSERT_EQ(analysis.winner.winner->key, kX);
  ASSERT_EQ(analysis.outliers.size(), 1u);
  EXPECT_EQ(analysis.outliers[0].link, 3u);
  EXPECT_EQ(analysis.outliers[0].config_key, kX);
  EXPECT_TRUE(analysis.matrix.cells[1][2].outlier);
  EXPECT_FALSE(analysis.matrix.cells[0][1].outlier);
}

TEST(ClusterAnalysisTest, DeviationsNeverReadAsTheThresholdItself) {
  EXPECT_EQ(FormatDeviations(3.8), "3.8");
  EXPECT_EQ(FormatDeviations(16), "16.0");
  EXPECT_EQ(FormatDeviations(3.04), "3.04");
  EXPECT_EQ(FormatDeviations(3.049), "3.05");
  EXPECT_EQ(FormatDeviations(3.06), "3.1");  // one decimal shows it is above 3
}

// ---- host groups ------------------------------------------------------------

TEST(ClusterAnalysisTest, DeviceClassDropsTheInstanceNumber) {
  EXPECT_EQ(DeviceClass("mlx5_0"), "mlx5");
  EXPECT_EQ(DeviceClass("mlx5_1"), "mlx5");
  EXPECT_EQ(DeviceClass("mlx4_0"), "mlx4");
  EXPECT_EQ(DeviceClass("rxe0"), "rxe");
  EXPECT_EQ(DeviceClass("bnxt_re1"), "bnxt_re");
  EXPECT_EQ(DeviceClass("tcp:eth0"), "tcp");
  EXPECT_EQ(DeviceClass("tcp:ens5f1"), "tcp");
  EXPECT_EQ(DeviceClass("efa"), "efa");
  EXPECT_EQ(DeviceClass("42"), "42");
  EXPECT_EQ(DeviceClass(""), "");
}

// a, b on mlx5 NICs, c, d on Soft-RoCE: within mlx5 X is best, within rxe Y.
ClusterInput TwoNicModels() {
  ClusterInput input;
  input.default_key = kDefault;
  const auto device = [](const std::string& host) {
    return host == "a" || host == "b" ? std::string("mlx5_0") : std::string("rxe0");
  };
  const auto link = [&](const std::string& client, const std::string& server, double x, double y) {
    return Link(client, server, {{kDefault, 10}, {kX, x}, {kY, y}}, device(client), device(server));
  };
  input.links = {link("a", "b", 5, 9), link("c", "d", 9, 6), link("a", "c", 8, 8),
                 link("b", "d", 8, 8), link("a", "d", 8, 8), link("b", "c", 8, 8)};
  return input;
}

TEST(ClusterAnalysisTest, HostsWithDifferentDevicesGetOneWinnerPerGroup) {
  const ClusterAnalysis analysis = AnalyzeCluster(TwoNicModels());
  const HostGrouping& grouping = analysis.grouping;
  ASSERT_EQ(grouping.groups.size(), 2u);
  EXPECT_EQ(grouping.groups[0].device_class, "mlx5");
  EXPECT_EQ(grouping.groups[0].hosts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(grouping.groups[0].links, (std::vector<size_t>{0}));
  EXPECT_EQ(grouping.groups[0].winner.winner->key, kX);
  EXPECT_EQ(grouping.groups[1].device_class, "rxe");
  EXPECT_EQ(grouping.groups[1].hosts, (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(grouping.groups[1].links, (std::vector<size_t>{1}));
  EXPECT_EQ(grouping.groups[1].winner.winner->key, kY);
  EXPECT_TRUE(grouping.winners_differ);
  EXPECT_NE(grouping.reason.find("a, b (mlx5); c, d (rxe)"), std::string::npos) << grouping.reason;
  // The cluster as a whole: X's worst is 9 (c -> d), Y's 9 (a -> b): a tie on the
  // worst link goes to key order (the default's worst is 10).
  EXPECT_EQ(analysis.winner.winner->key, kX);
}

TEST(ClusterAnalysisTest, GroupsThatAgreeNeedOneConfig) {
  ClusterInput input = TwoNicModels();
  input.links[1].objectives[kX] = 5;  // rxe now prefers X too
  const HostGrouping grouping = AnalyzeCluster(input).grouping;
  ASSERT_EQ(grouping.groups.size(), 2u);
  EXPECT_FALSE(grouping.winners_differ);
  EXPECT_NE(grouping.reason.find("one config serves every host"), std::string::npos);
}

TEST(ClusterAnalysisTest, OneDeviceClassIsOneGroupWithTheClusterWinner) {
  const ClusterAnalysis analysis = AnalyzeCluster(FourHosts());
  ASSERT_EQ(analysis.grouping.groups.size(), 1u);
  EXPECT_FALSE(analysis.grouping.winners_differ);
  EXPECT_TRUE(analysis.grouping.reason.empty());
  EXPECT_EQ(analysis.grouping.groups[0].hosts.size(), 4u);
  EXPECT_EQ(analysis.grouping.groups[0].winner.winner->key, kX);
}

TEST(ClusterAnalysisTest, AHostWithTwoDeviceClassesIsAGroupOfItsOwn) {
  ClusterInput input = TwoNicModels();
  input.links.push_back(Link("e", "a", {{kDefault, 10}}, "rxe0", "mlx5_0"));
  input.links.push_back(Link("e", "c", {{kDefault, 10}}, "mlx5_1", "rxe0"));
  const HostGrouping grouping = AnalyzeCluster(input).grouping;
  ASSERT_EQ(grouping.groups.size(), 3u);
  EXPECT_EQ(grouping.groups[1].device_class, "mlx5+rxe");
  EXPECT_EQ(grouping.groups[1].hosts, (std::vector<std::string>{"e"}));
  EXPECT_TRUE(grouping.groups[1].links.empty());
  EXPECT_FALSE(grouping.groups[1].winner.winner);
}

TEST(ClusterAnalysisTest, HostsWithUnknownDevicesSplitNothing) {
  ClusterInput input;
  input.default_key = kDefault;
  input.links = {Link("a", "b", {{kDefault, 10}}, "tcp:eth0", "tcp:eth0"),
                 Link("b", "c", {{kDefault, 10}}, "tcp:eth0", "tcp:eth0"),
                 FailedLink("c", "x")};  // x never started: no device known
  input.links[2].client.device = "tcp:eth0";
  const HostGrouping grouping = AnalyzeCluster(input).grouping;
  ASSERT_EQ(grouping.groups.size(), 1u);
  EXPECT_EQ(grouping.groups[0].hosts, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(grouping.reason.empty());
}

// ---- properties over random clusters ------------------------------------------

ClusterInput RandomCluster(std::mt19937& random) {
  std::uniform_int_distribution<int> host_count(2, 6);
  std::uniform_int_distribution<int> link_count(1, 12);
  std::uniform_real_distribution<double> value(1, 100);
  std::bernoulli_distribution coin(0.15);
  const std::vector<std::string> keys = {kDefault, kX, kY, "eager_threshold=1MiB"};
  ClusterInput input;
  input.default_key = kDefault;
  input.goal = coin(random) ? ObjectiveGoal::kMax : ObjectiveGoal::kMin;
  input.cluster_goal = coin(random) ? ClusterGoal::kGeomean : ClusterGoal::kWorstLink;
  const int hosts = host_count(random);
  const int links = link_count(random);
  std::uniform_int_distribution<int> host(0, hosts - 1);
  for (int i = 0; i < links; ++i) {
    LinkInput link = Link("h" + std::to_string(host(random)), "h" + std::to_string(host(random)),
                          {}, coin(random) ? "rxe0" : "mlx5_0", "mlx5_0");
    link.ok = !coin(random);
    for (const std::string& key : keys) {
      if (!coin(random)) link.objectives[key] = value(random);
    }
    input.links.push_back(std::move(link));
  }
  return input;
}

std::set<std::pair<std::string, std::string>> OutlierHosts(const ClusterInput& input,
                                                           const ClusterAnalysis& analysis) {
  std::set<std::pair<std::string, std::string>> hosts;
  for (const Outlier& outlier : analysis.outliers) {
    const LinkInput& link = input.links[outlier.link];
    hosts.insert({link.client.host + "/" + std::to_string(outlier.objective), link.server.host});
  }
  return hosts;
}

TEST(ClusterAnalysisPropertyTest, TheLinksOrderChangesNothing) {
  std::mt19937 random(11);
  for (int round = 0; round < 300; ++round) {
    ClusterInput input = RandomCluster(random);
    const ClusterAnalysis before = AnalyzeCluster(input);
    ClusterInput shuffled = input;
    std::shuffle(shuffled.links.begin(), shuffled.links.end(), random);
    const ClusterAnalysis after = AnalyzeCluster(shuffled);
    ASSERT_EQ(before.winner.winner.has_value(), after.winner.winner.has_value());
    if (before.winner.winner) {
      EXPECT_EQ(before.winner.winner->key, after.winner.winner->key);
      // The geometric mean sums logarithms in link order: equal to rounding.
      EXPECT_NEAR(before.winner.winner->score, after.winner.winner->score, 1e-9);
    }
    EXPECT_EQ(OutlierHosts(input, before), OutlierHosts(shuffled, after));
    EXPECT_EQ(before.matrix.hosts, after.matrix.hosts);
    for (size_t r = 0; r < before.matrix.cells.size(); ++r) {
      for (size_t c = 0; c < before.matrix.cells.size(); ++c) {
        EXPECT_EQ(before.matrix.cells[r][c].value, after.matrix.cells[r][c].value);
      }
    }
  }
}

TEST(ClusterAnalysisPropertyTest, TheWinnerIsMeasuredEverywhereAndScoresBest) {
  std::mt19937 random(12);
  int with_winner = 0;
  for (int round = 0; round < 300; ++round) {
    const ClusterInput input = RandomCluster(random);
    const ClusterAnalysis analysis = AnalyzeCluster(input);
    if (!analysis.winner.winner) continue;
    ++with_winner;
    const ConfigScore& winner = *analysis.winner.winner;
    std::vector<double> values;
    for (const LinkInput& link : input.links) {
      if (!LinkUsable(link)) continue;
      ASSERT_EQ(link.objectives.count(winner.key), 1u);
      values.push_back(link.objectives.at(winner.key));
    }
    const double worst = input.goal == ObjectiveGoal::kMin
                             ? *std::max_element(values.begin(), values.end())
                             : *std::min_element(values.begin(), values.end());
    EXPECT_DOUBLE_EQ(winner.worst, worst);
    for (const ConfigScore& other : analysis.winner.candidates) {
      EXPECT_FALSE(Better(input.goal, other.score, winner.score)) << other.key;
    }
  }
  EXPECT_GT(with_winner, 50);  // the generator does make clusters with a winner
}

TEST(ClusterAnalysisPropertyTest, ScalingEveryObjectiveKeepsWinnerAndOutliers) {
  std::mt19937 random(13);
  for (int round = 0; round < 300; ++round) {
    const ClusterInput input = RandomCluster(random);
    ClusterInput scaled = input;
    for (LinkInput& link : scaled.links) {
      for (auto& [key, value] : link.objectives) value *= 1024;  // exact in binary
    }
    const ClusterAnalysis a = AnalyzeCluster(input);
    const ClusterAnalysis b = AnalyzeCluster(scaled);
    ASSERT_EQ(a.winner.winner.has_value(), b.winner.winner.has_value());
    if (a.winner.winner) {
      EXPECT_EQ(a.winner.winner->key, b.winner.winner->key);
    }
    ASSERT_EQ(a.outliers.size(), b.outliers.size());
    for (size_t i = 0; i < a.outliers.size(); ++i) {
      EXPECT_EQ(a.outliers[i].link, b.outliers[i].link);
      EXPECT_NEAR(a.outliers[i].deviations, b.outliers[i].deviations, 1e-9);
    }
  }
}

TEST(ClusterAnalysisPropertyTest, MinimisingXIsMaximisingItsReciprocal) {
  std::mt19937 random(14);
  for (int round = 0; round < 300; ++round) {
    ClusterInput input = RandomCluster(random);
    input.goal = ObjectiveGoal::kMin;
    ClusterInput reciprocal = input;
    reciprocal.goal = ObjectiveGoal::kMax;
    for (LinkInput& link : reciprocal.links) {
      for (auto& [key, value] : link.objectives) value = 1 / value;
    }
    const ClusterAnalysis a = AnalyzeCluster(input);
    const ClusterAnalysis b = AnalyzeCluster(reciprocal);
    ASSERT_EQ(a.winner.winner.has_value(), b.winner.winner.has_value());
    if (a.winner.winner) {
      EXPECT_EQ(a.winner.winner->key, b.winner.winner->key);
    }
  }
}

TEST(ClusterAnalysisPropertyTest, QuietLinksHaveNoOutlierAndOneSlowLinkIsFound) {
  std::mt19937 random(15);
  std::uniform_real_distribution<double> noise(0.99, 1.01);
  std::uniform_int_distribution<int> link_count(3, 16);
  for (int round = 0; round < 300; ++round) {
    std::vector<double> values(static_cast<size_t>(link_count(random)));
    for (double& value : values) value = 40 * noise(random);
    EXPECT_TRUE(FindOutliers(UnderOneConfig(values), kDefault).empty());
    const size_t slow = std::uniform_int_distribution<size_t>(0, values.size() - 1)(random);
    values[slow] *= 1.5;
    const std::vector<Outlier> outliers = FindOutliers(UnderOneConfig(values), kDefault);
    ASSERT_EQ(outliers.size(), 1u);
    EXPECT_EQ(outliers[0].link, slow);
  }
}

TEST(ClusterAnalysisPropertyTest, AtMostHalfTheLinksAreOutliers) {
  std::mt19937 random(16);
  std::lognormal_distribution<double> heavy_tailed(3, 1.5);
  for (int round = 0; round < 300; ++round) {
    std::vector<double> values(static_cast<size_t>(3 + round % 14));
    for (double& value : values) value = heavy_tailed(random);
    const auto outliers = FindOutliers(UnderOneConfig(values), kDefault);
    EXPECT_LE(outliers.size() * 2, values.size());
    for (const Outlier& outlier : outliers) EXPECT_GT(outlier.deviations, kOutlierDeviations);
  }
}

}  // namespace
}  // namespace artune::tuner
