// What the ranks of `artune sweep --mpi` send each other (artune/cluster/cluster_wire.h): a
// finished link reads back as it was measured, rank 0 stores it as a sweep with
// its trials and verdict plus the link row, and anything malformed is refused.
// (Not named *_test.cc: tests/CMakeLists.txt would make that a cli_tests area binary.)
#include "artune/cluster/cluster_wire.h"

#include <gtest/gtest.h>

#include "../sample_records.h"
#include "../temp_dir.h"

namespace artune::cluster {
namespace {

db::TrialRecord Trial(const std::string& eager, double objective) {
  db::TrialRecord trial = samples::MeasuredTrial({{"eager_threshold", eager}}, objective);
  trial.started_at = "2026-11-25T20:00:00.000Z";
  trial.metrics["p99_us"] = objective * 2.0 / 3.0;
  return trial;
}

LinkReport SampleReport() {
  LinkReport report;
  report.link.round = 2;
  report.link.pair = 1;
  report.link.client_rank = 1;
  report.link.server_rank = 3;
  report.link.client_host = "node1";
  report.link.client_device = "tcp:eth0";
  report.link.server_host = "node3";
  report.link.server_device = "rxe0";
  report.link.status = db::LinkStatus::kOk;
  report.link.sweep_id = 99;  // the scratch store's: not what rank 0 stores
  report.seconds = 1.5;
  db::SweepRecord sweep = samples::GridSweep();
  sweep.created_at = "2026-11-25T20:00:00.000Z";
  sweep.finished_at = "2026-11-25T20:00:01.000Z";
  sweep.host = "node1";
  sweep.peer = "10.199.0.4:40000";
  sweep.strategy = "ab";
  db::SweepVerdict verdict;
  verdict.verdict = db::Verdict::kWithinNoise;
  verdict.best_knobs = "eager_threshold=4KiB";
  verdict.default_remeasured = Trial("16KiB", 10.0);
  verdict.best_remeasured = Trial("4KiB", 9.5);
  verdict.final_rounds = 6;
  verdict.finalists = {{Trial("4KiB", 9.5), 4}};
  sweep.verdict = verdict;
  report.sweep = sweep;
  report.trials = {Trial("16KiB", 10.25), Trial("4KiB", 0.1 + 0.2)};
  return report;
}

// A link from rank 0 to rank 2 that failed with `error`: no sweep, no trials.
LinkReport FailedLink(const std::string& error) {
  LinkReport report;
  report.link.client_rank = 0;
  report.link.server_rank = 2;
  report.link.status = db::LinkStatus::kFailed;
  report.link.error = error;
  return report;
}

TEST(ClusterWire, ALinkReadsBackAsMeasured) {
  const LinkReport sent = SampleReport();
  auto received = DecodeLinkReport(EncodeLinkReport(sent));
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ(received->link.round, 2u);
  EXPECT_EQ(received->link.pair, 1u);
  EXPECT_EQ(received->link.client_rank, 1u);
  EXPECT_EQ(received->link.server_rank, 3u);
  EXPECT_EQ(received->link.server_device, "rxe0");
  EXPECT_EQ(received->link.status, db::LinkStatus::kOk);
  EXPECT_EQ(received->seconds, 1.5);
  ASSERT_TRUE(received->sweep.has_value());
  EXPECT_EQ(received->sweep->peer, "10.199.0.4:40000");
  EXPECT_EQ(received->sweep->strategy, "ab");
  EXPECT_EQ(received->sweep->base_config, sent.sweep->base_config);
  ASSERT_TRUE(received->sweep->verdict.has_value());
  EXPECT_EQ(received->sweep->verdict->verdict, db::Verdict::kWithinNoise);
  EXPECT_EQ(received->sweep->verdict->final_rounds, 6u);
  ASSERT_EQ(received->sweep->verdict->finalists.size(), 1u);
  EXPECT_EQ(received->sweep->verdict->finalists[0].rounds_won, 4u);
  ASSERT_TRUE(received->sweep->verdict->best_remeasured.has_value());
  EXPECT_EQ(received->sweep->verdict->best_remeasured->objective, 9.5);
  ASSERT_EQ(received->trials.size(), 2u);
  // Doubles cross exactly, not rounded to a few digits.
  EXPECT_EQ(received->trials[1].objective, 0.1 + 0.2);
  EXPECT_EQ(received->trials[0].metrics, sent.trials[0].metrics);
  EXPECT_EQ(received->trials[0].config, sent.trials[0].config);
}

TEST(ClusterWire, AFailedLinkWithoutASweepReadsBack) {
  const LinkReport sent = FailedLink("the server rank could not start: cannot bind");
  auto received = DecodeLinkReport(EncodeLinkReport(sent));
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ(received->link.status, db::LinkStatus::kFailed);
  EXPECT_EQ(received->link.error, sent.link.error);
  EXPECT_FALSE(received->sweep.has_value());
  EXPECT_TRUE(received->trials.empty());
}

TEST(ClusterWire, MalformedTextIsCorruption) {
  for (const char* text : {"", "{", "[]", R"({"round": 0})", R"({"round": "x"})"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(DecodeLinkReport(text).status().code(), ErrorCode::kCorruption);
    EXPECT_EQ(DecodeCapture(text).status().code(), ErrorCode::kCorruption);
  }
  std::string unknown_status = EncodeLinkReport(SampleReport());
  unknown_status.replace(unknown_status.find("\"ok\""), 4, "\"maybe\"");
  EXPECT_EQ(DecodeLinkReport(unknown_status).status().code(), ErrorCode::kCorruption);
}

TEST(ClusterWire, ACaptureCrossesWhole) {
  db::CaptureRecord capture;
  capture.started_at = "2026-11-25T20:00:00.000Z";
  capture.backend = "preload";
  capture.process = "python3";
  capture.duration_s = 2.5;
  capture.lost_events = 3;
  capture.profile_json = R"({"methods": [], "note": "quotes \" and \n newlines"})";
  capture.methods = {
      {"/tensorflow.WorkerService/RecvTensor", "response", 10, 4096, "skew", 2, 7, 1}};
  auto received = DecodeCapture(EncodeCapture(capture));
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ(received->profile_json, capture.profile_json);
  EXPECT_EQ(received->backend, "preload");
  EXPECT_EQ(received->lost_events, 3u);
  ASSERT_EQ(received->methods.size(), 1u);
  EXPECT_EQ(received->methods[0].method, "/tensorflow.WorkerService/RecvTensor");
  EXPECT_EQ(received->methods[0].medium, 7u);
}

class StoreLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = db::Store::Open(dir_.File("artune.db"));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    db::ClusterRecord cluster;
    cluster.ranks = 4;
    cluster.pairs = "all";
    cluster.measurement = "ab";
    auto id = store_->InsertCluster(cluster);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    cluster_id_ = *id;
  }
  const test_support::TempDir dir_{"artune-wire"};
  std::unique_ptr<db::Store> store_;  // closed before dir_ goes
  int64_t cluster_id_ = 0;
};

TEST_F(StoreLinkTest, StoresTheSweepItsTrialsVerdictAndTheLink) {
  auto stored = StoreLinkReport(*store_, cluster_id_, SampleReport());
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_NE(stored->sweep_id, 99) << "the scratch store's sweep id leaked into the store";
  auto links = store_->ListClusterLinks(cluster_id_);
  ASSERT_TRUE(links.ok());
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ((*links)[0].sweep_id, stored->sweep_id);
  EXPECT_EQ((*links)[0].client_host, "node1");

  auto sweep = store_->GetSweep(stored->sweep_id);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->host, "node1");
  EXPECT_EQ(sweep->strategy, "ab");
  EXPECT_FALSE(sweep->finished_at.empty());
  ASSERT_TRUE(sweep->verdict.has_value());
  EXPECT_EQ(sweep->verdict->verdict, db::Verdict::kWithinNoise);
  EXPECT_EQ(sweep->verdict->finalists.size(), 1u);
  auto trials = store_->ListTrials(stored->sweep_id);
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ(trials->size(), 2u);

  // The same link again: refused, as --resume relies on.
  EXPECT_EQ(StoreLinkReport(*store_, cluster_id_, SampleReport()).status().code(),
            ErrorCode::kAlreadyExists);
}

TEST_F(StoreLinkTest, AFailedLinkWithoutASweepIsStoredWithItsError) {
  LinkReport report = FailedLink("peer 10.199.0.3:4000 did not answer");
  report.link.sweep_id = 5;
  auto stored = StoreLinkReport(*store_, cluster_id_, report);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->sweep_id, 0);
  auto links = store_->ListClusterLinks(cluster_id_);
  ASSERT_TRUE(links.ok());
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ((*links)[0].status, db::LinkStatus::kFailed);
  EXPECT_EQ((*links)[0].error, report.link.error);
}

// A model run's link: its model crosses whole and is stored as a link model the
// link points at, without a sweep.
TEST_F(StoreLinkTest, AModelLinkCrossesAndPointsAtItsStoredModel) {
  LinkReport sent;
  sent.link.client_rank = 1;
  sent.link.server_rank = 3;
  sent.link.client_host = "node1";
  sent.link.server_host = "node3";
  sent.link.status = db::LinkStatus::kOk;
  sent.seconds = 3.25;
  db::LinkModelRecord model;
  model.created_at = "2026-11-27T20:00:00.000Z";
  model.host = "node1";
  model.peer = "10.199.0.4:40000";
  model.fabric = "tcp";
  model.rounds = 1;
  model.duration_s = 3.1;
  model.points = {
      {"eager", "adaptive", 0, 0, 64, 1, 12e-6, 11e-6, 14e-6, 1, 1},
      {"chunked-rendezvous", "adaptive", 524288, 4, 4194304, 1, 2e-3, 1.9e-3, 2.2e-3, 1, 8}};
  sent.model = model;
  auto received = DecodeLinkReport(EncodeLinkReport(sent));
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  ASSERT_TRUE(received->model.has_value());
  EXPECT_FALSE(received->sweep.has_value());
  EXPECT_EQ(received->model->peer, model.peer);
  ASSERT_EQ(received->model->points.size(), 2u);
  EXPECT_EQ(received->model->points[1].chunk_size, 524288u);
  EXPECT_EQ(received->model->points[1].slices, 8u);
  EXPECT_DOUBLE_EQ(received->model->points[1].median_s, 2e-3);

  auto stored = StoreLinkReport(*store_, cluster_id_, *received);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->sweep_id, 0);
  ASSERT_NE(stored->model_id, 0);
  auto links = store_->ListClusterLinks(cluster_id_);
  ASSERT_TRUE(links.ok());
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ((*links)[0].model_id, stored->model_id);
  auto read = store_->GetLinkModel(stored->model_id);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->host, "node1");
  EXPECT_EQ(read->points.size(), 2u);
}

}  // namespace
}  // namespace artune::cluster
