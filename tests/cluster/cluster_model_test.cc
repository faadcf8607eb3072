// A model cluster run's predictions and outliers (artune/cluster/cluster_model.h)
// over synthetic link models whose costs are known by hand.
#include "artune/cluster/cluster_model.h"

#include <gtest/gtest.h>

#include <limits>

#include "../synthetic_link_model.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {
namespace {

using model::AddSyntheticCurve;
using transport::PollingMode;
using transport::Protocol;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// A link whose calls cost `fixed` times and whose bytes `slow` times the usual
// (eager 10 us + 1 GB/s, read 30 us + 4 GB/s, chunked 40 us + 2 or 8 GB/s), and
// whose chunked transfers cost `chunked` times theirs.
model::LinkModel LinkOf(int64_t id, double fixed = 1, double slow = 1, double chunked = 1) {
  model::LinkModel model;
  model.id = id;
  model.fabric = "tcp";
  // One call in flight, one round.
  AddSyntheticCurve(model, Protocol::kEager, 10e-6 * fixed, 1e9 / slow);
  AddSyntheticCurve(model, Protocol::kCoalescedEager, 10e-6 * fixed, 1e9 / slow, {.first = 512});
  AddSyntheticCurve(model, Protocol::kRendezvousRead, 30e-6 * fixed, 4e9 / slow);
  AddSyntheticCurve(model, Protocol::kChunkedRendezvous, 40e-6 * fixed * chunked,
                    2e9 / slow / chunked, {.chunk = 64 * kKiB, .first = 128 * kKiB, .depth = 4});
  AddSyntheticCurve(model, Protocol::kChunkedRendezvous, 40e-6 * fixed * chunked,
                    8e9 / slow / chunked, {.chunk = 1 * kMiB, .first = 2 * kMiB, .depth = 4});
  return model;
}

Workload MessagesOf(const std::vector<std::vector<uint64_t>>& layouts) {
  Workload workload;
  workload.description = "synthetic";
  for (size_t i = 0; i < layouts.size(); ++i) {
    auto payload = GeneratePayloadFromSizes(layouts[i], i + 1);
    EXPECT_TRUE(payload.ok()) << payload.status().ToString();
    workload.total_bytes += payload->total_bytes();
    workload.messages.push_back(std::move(*payload));
  }
  return workload;
}

std::vector<std::optional<LinkCosts>> CostsOf(const std::vector<model::LinkModel>& models) {
  std::vector<std::optional<LinkCosts>> costs;
  for (const model::LinkModel& model : models) {
    auto link = LinkCostsOf(model, PollingMode::kAdaptive, 1);
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    costs.push_back(*link);
  }
  return costs;
}

TEST(LinkCosts, PerCallIsTheSmallestEagerCallAndPerByteTheReadsSlope) {
  auto costs = LinkCostsOf(LinkOf(1), PollingMode::kAdaptive, 1);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  EXPECT_NEAR(costs->per_call_s, 10e-6 + 64 / 1e9, 1e-9);
  // The read's slope is its bandwidth's inverse (4 GB/s; 64KiB and 1MiB lie on or
  // between measured sizes: log-log interpolation, within 5 %).
  EXPECT_NEAR(costs->per_byte_s, 1 / 4e9, 0.05 / 4e9);
  // A link whose calls are 20x slower has the same bytes.
  auto delayed = LinkCostsOf(LinkOf(2, 20), PollingMode::kAdaptive, 1);
  ASSERT_TRUE(delayed.ok());
  EXPECT_NEAR(delayed->per_call_s, 20 * 10e-6 + 64 / 1e9, 1e-9);
  EXPECT_NEAR(delayed->per_byte_s, costs->per_byte_s, 0.1 * costs->per_byte_s);
  EXPECT_EQ(LinkCostsOf(LinkOf(1), PollingMode::kBusy, 1).status().code(), ErrorCode::kNotFound);
}

TEST(ModelOutliers, LinksAlikeWithinNoiseHaveNone) {
  std::vector<model::LinkModel> models;
  for (double fixed : {1.0, 1.1, 0.92, 1.05, 0.97}) models.push_back(LinkOf(1, fixed, fixed));
  EXPECT_TRUE(ModelOutliers(CostsOf(models)).empty());
}

TEST(ModelOutliers, ASlowCallAndASlowByteAreEachTheirTerm) {
  std::vector<model::LinkModel> models;
  for (double fixed : {1.0, 1.1, 0.92, 1.05, 0.97}) models.push_back(LinkOf(1, fixed, fixed));
  models[1] = LinkOf(2, /*fixed=*/20);  // a delayed link: every call 20x
  models[3] = LinkOf(4, 1, /*slow=*/10);
  const std::vector<ModelOutlier> outliers = ModelOutliers(CostsOf(models));
  ASSERT_EQ(outliers.size(), 2u);
  EXPECT_EQ(outliers[0].link, 1u);
  EXPECT_EQ(outliers[0].term, "per-call");
  EXPECT_GT(outliers[0].ratio, 15);
  EXPECT_EQ(outliers[1].link, 3u);
  EXPECT_EQ(outliers[1].term, "per-byte");
  EXPECT_GT(outliers[1].ratio, 5);
  const std::string sentence = ModelOutlierSentence(outliers[0], "node1 ↔ node2");
  EXPECT_NE(sentence.find("look at the link node1 ↔ node2: per-call cost"), std::string::npos)
      << sentence;
}

TEST(ModelOutliers, FarInMadsButUnderTheRatioIsNoOutlier) {
  // Four links agree to the digit; the fifth is 2.5x slower per call (a loaded
  // host's noise on one short model): many MADs away (the floor is 5 % of the
  // median), but under kModelOutlierRatio.
  std::vector<model::LinkModel> models(4, LinkOf(1));
  models.push_back(LinkOf(5, 2.5));
  EXPECT_TRUE(ModelOutliers(CostsOf(models)).empty());
  models.back() = LinkOf(5, 5);
  const std::vector<ModelOutlier> outliers = ModelOutliers(CostsOf(models));
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_EQ(outliers[0].link, 4u);
}

TEST(ModelOutliers, TwoLinksCannotStandOut) {
  EXPECT_TRUE(ModelOutliers(CostsOf({LinkOf(1), LinkOf(2, 50)})).empty());
  EXPECT_TRUE(ModelOutliers({std::nullopt, std::nullopt, std::nullopt}).empty());
}

TEST(PredictCluster, TheClusterBestHasTheLeastTotalOverTheLinks) {
  // Two links where chunked transfers are cheap (they pick 1MiB chunks for the
  // 4MiB slices) and one where they cost 3x (it reads them whole, 8MiB chunks),
  // plus a failed link without a model.
  const std::vector<std::optional<model::LinkModel>> models = {LinkOf(1), LinkOf(2), std::nullopt,
                                                               LinkOf(3, 1, 1, /*chunked=*/3)};
  const Workload workload = MessagesOf({{32 * kKiB}, {4 * kMiB}, {4 * kMiB}});
  auto space = ParseSearchSpace(
      std::vector<std::string>{"eager_threshold=16KiB,64KiB", "chunk_size=1MiB,8MiB"});
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  transport::Config base;
  base.polling = PollingMode::kAdaptive;
  auto cluster = PredictCluster(models, workload, *space, base, 1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->usable_links, 3u);
  ASSERT_EQ(cluster->links.size(), 4u);
  EXPECT_FALSE(cluster->links[2]);
  EXPECT_EQ(cluster->links[0]->best().knobs.at("chunk_size"), "1MiB");
  EXPECT_EQ(cluster->links[3]->best().knobs.at("chunk_size"), "8MiB");
  ASSERT_EQ(cluster->ranked.size(), 4u);
  // Every config's total is the sum of its links' predictions; the first is least.
  double least = std::numeric_limits<double>::infinity();
  std::string least_key;
  for (const ClusterConfigTotal& total : cluster->ranked) {
    double sum = 0;
    for (const auto& link : cluster->links) {
      if (!link) continue;
      for (const model::ConfigPrediction& config : link->ranked) {
        if (db::TrialKnobKey(config.knobs) == total.key) sum += config.cost.seconds;
      }
    }
    EXPECT_NEAR(total.seconds, sum, 1e-12) << total.key;
    if (sum < least) least = sum, least_key = total.key;
  }
  EXPECT_EQ(cluster->ranked.front().key, least_key);
  // Two cheap-chunk links outweigh one: 1MiB chunks for the cluster, and its
  // slowest link is the one that would rather read whole.
  EXPECT_EQ(cluster->ranked.front().knobs.at("chunk_size"), "1MiB");
  EXPECT_EQ(cluster->ranked.front().worst_link, 3u);
  ASSERT_TRUE(cluster->default_total);
  EXPECT_GT(cluster->margin, 0);
  EXPECT_TRUE(cluster->outliers.empty());
}

}  // namespace
}  // namespace artune::tuner
