// Link models and predictions (schema v9, points of several slices v10): stored,
// read back, refused when malformed; stores of schema v8 and v9 open and upgrade
// with their rows unchanged.
#include <gtest/gtest.h>

#include <vector>

#include <sqlite3.h>
#include "artune/db/store.h"

#include "migration_util.h"
#include "migrations.h"
#include "sqlite.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

LinkModelRecord SampleModel(const std::string& fabric = "tcp") {
  LinkModelRecord model;
  model.host = "node1";
  model.peer = "loopback";
  model.fabric = fabric;
  model.rounds = 3;
  model.duration_s = 21.5;
  model.points = {
      {"eager", "adaptive", 0, 0, 64, 1, 12e-6, 11e-6, 14e-6, 3},
      {"eager", "adaptive", 0, 0, 64, 8, 4e-6, 3.5e-6, 5e-6, 3},
      {"chunked-rendezvous", "event", 512 * 1024, 4, 8 << 20, 1, 3e-3, 2.9e-3, 3.3e-3, 3},
  };
  return model;
}

PredictionRecord SamplePrediction(int64_t model_id) {
  PredictionRecord prediction;
  prediction.model_id = model_id;
  prediction.workload = "capture:3";
  prediction.search_space = "eager_threshold=1KiB,64KiB";
  prediction.inflight = 4;
  prediction.configs = 2;
  prediction.best_knobs = "eager_threshold=64KiB";
  prediction.best_s = 1.5e-3;
  prediction.default_knobs = "eager_threshold=16KiB";
  prediction.default_s = 2e-3;
  prediction.summary =
      "the 16KiB-64KiB slices: eager instead of rendezvous-read saves 25 % of the pass";
  prediction.config = {{"eager_threshold", "64KiB"}, {"chunk_size", "512KiB"}};
  return prediction;
}

TEST(LinkModels, StoredWithTheirPointsAndListedNewestFirst) {
  TempDir dir;
  auto store = Store::Open(dir.File("artune.db"));
  ASSERT_TRUE(store.ok());
  auto first = (*store)->InsertLinkModel(SampleModel("tcp"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = (*store)->InsertLinkModel(SampleModel("shm"));
  ASSERT_TRUE(second.ok());
  auto model = (*store)->GetLinkModel(*first);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->fabric, "tcp");
  EXPECT_EQ(model->rounds, 3u);
  EXPECT_FALSE(model->created_at.empty());
  ASSERT_EQ(model->points.size(), 3u);
  // Read back by protocol, polling, chunk, depth, size, inflight.
  EXPECT_EQ(model->points[0].protocol, "chunked-rendezvous");
  EXPECT_EQ(model->points[0].chunk_size, 512u * 1024);
  EXPECT_EQ(model->points[0].size, 8u << 20);
  EXPECT_DOUBLE_EQ(model->points[0].median_s, 3e-3);
  EXPECT_EQ(model->points[2].inflight, 8u);
  auto listed = (*store)->ListLinkModels(0);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ(listed->front().id, *second);
  EXPECT_EQ(listed->front().points.size(), 3u);
  EXPECT_EQ((*store)->GetLinkModel(99).status().code(), ErrorCode::kNotFound);
}

TEST(LinkModels, MalformedModelsAreRefused) {
  TempDir dir;
  auto store = Store::Open(dir.File("artune.db"));
  ASSERT_TRUE(store.ok());
  LinkModelRecord no_fabric = SampleModel("");
  EXPECT_EQ((*store)->InsertLinkModel(no_fabric).status().code(), ErrorCode::kInvalidArgument);
  LinkModelRecord empty = SampleModel();
  empty.points.clear();
  EXPECT_EQ((*store)->InsertLinkModel(empty).status().code(), ErrorCode::kInvalidArgument);
  LinkModelRecord repeated = SampleModel();
  repeated.points.push_back(repeated.points.front());
  EXPECT_FALSE((*store)->InsertLinkModel(repeated).ok());
  LinkModelRecord bad_polling = SampleModel();
  bad_polling.points[0].polling = "sometimes";
  EXPECT_FALSE((*store)->InsertLinkModel(bad_polling).ok());
  // Nothing half-stored.
  auto listed = (*store)->ListLinkModels(0);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

TEST(Predictions, StoredWithTheBestConfigAndTiedToTheirModel) {
  TempDir dir;
  auto store = Store::Open(dir.File("artune.db"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->InsertPrediction(SamplePrediction(5)).status().code(), ErrorCode::kNotFound);
  auto model = (*store)->InsertLinkModel(SampleModel());
  ASSERT_TRUE(model.ok());
  auto id = (*store)->InsertPrediction(SamplePrediction(*model));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto prediction = (*store)->GetPrediction(*id);
  ASSERT_TRUE(prediction.ok()) << prediction.status().ToString();
  EXPECT_EQ(prediction->model_id, *model);
  EXPECT_EQ(prediction->best_knobs, "eager_threshold=64KiB");
  EXPECT_DOUBLE_EQ(prediction->best_s, 1.5e-3);
  EXPECT_EQ(prediction->config, SamplePrediction(*model).config);
  EXPECT_EQ(prediction->summary, SamplePrediction(*model).summary);
  PredictionRecord no_best = SamplePrediction(*model);
  no_best.best_knobs.clear();
  EXPECT_EQ((*store)->InsertPrediction(no_best).status().code(), ErrorCode::kInvalidArgument);
  auto listed = (*store)->ListPredictions(0);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().config.at("chunk_size"), "512KiB");
  EXPECT_EQ((*store)->GetPrediction(42).status().code(), ErrorCode::kNotFound);
}

TEST(Predictions, AStoreOfSchemaV8OpensAndUpgradesUnchanged) {
  TempDir dir;
  const UpgradedStore upgraded =
      UpgradeWithRow(dir.File("artune.db"), 8, "link_models",
                     [](Store& v8) { return v8.InsertBenchRun(SampleRun(2)); },
                     {{"link_models", 0}, {"predictions", 0}});
  const std::unique_ptr<Store>& store = upgraded.store;
  ASSERT_NE(store, nullptr);
  auto run = store->GetBenchRun(upgraded.old_row);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->config, SampleRun(2).config);
  EXPECT_TRUE(store->InsertLinkModel(SampleModel()).ok());
}

TEST(LinkModels, PointsOfSeveralSlicesAreTheirOwnRows) {
  TempDir dir;
  auto store = Store::Open(dir.File("artune.db"));
  ASSERT_TRUE(store.ok());
  LinkModelRecord model = SampleModel();
  // The same point as the first but for calls of 8 slices: another row.
  LinkModelPointRow eight = model.points[0];
  eight.slices = 8;
  eight.median_s = 40e-6;
  model.points.push_back(eight);
  auto id = (*store)->InsertLinkModel(model);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto back = (*store)->GetLinkModel(*id);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->points.size(), 4u);
  size_t with_eight = 0;
  for (const LinkModelPointRow& point : back->points) {
    if (point.slices == 8) {
      ++with_eight;
      EXPECT_DOUBLE_EQ(point.median_s, 40e-6);
    }
  }
  EXPECT_EQ(with_eight, 1u);
  model.points.back().slices = 0;
  EXPECT_EQ((*store)->InsertLinkModel(model).status().code(), ErrorCode::kInvalidArgument);
}

TEST(LinkModels, AStoreOfSchemaV9KeepsItsPointsAsOneSlicePerCall) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  { ASSERT_NE(OpenAtVersion(path, 9), nullptr); }
  {
    // Rows as a v9 build wrote them (no slices column).
    auto db = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(db->Exec("INSERT INTO link_models (created_at, host, peer, fabric, rounds, "
                         "duration_s) VALUES ('2026-11-27T10:00:00.000Z', 'n', 'loopback', "
                         "'tcp', 1, 3.5);"
                         "INSERT INTO link_model_points (model_id, protocol, polling, "
                         "chunk_size, pipeline_depth, size, inflight, median_s, low_s, high_s, "
                         "rounds) VALUES (1, 'rendezvous-read', 'busy', 0, 0, 1048576, 1, "
                         "4e-4, 3e-4, 5e-4, 2);")
                    .ok());
  }
  std::unique_ptr<Store> store;
  OpenMigrated(path, store);
  ASSERT_NE(store, nullptr);
  auto model = store->GetLinkModel(1);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_EQ(model->points.size(), 1u);
  EXPECT_EQ(model->points[0].slices, 1u);
  EXPECT_DOUBLE_EQ(model->points[0].median_s, 4e-4);
  EXPECT_EQ(model->points[0].rounds, 2u);
}

}  // namespace
}  // namespace artune::db
