// The watch view: `artune watch`'s stored decisions turned into rows (the change,
// predicted and measured saving with the A/B's sign read the right way for
// pushes, re-checks and roll-backs) and drawn newest first at 80x24.
#include <gtest/gtest.h>

#include "canvas.h"
#include "views.h"
#include "watch_model.h"

namespace artune::dashboard {
namespace {

bool Contains(const Canvas& canvas, const std::string& text) {
  return canvas.Text().find(text) != std::string::npos;
}

db::WatchEventRecord Push(int64_t id) {
  db::WatchEventRecord event;
  event.id = id;
  event.at = "2026-11-27T16:40:12.345Z";
  event.servers = "127.0.0.1:7001";
  event.action = db::WatchAction::kPush;
  event.reason = "drift 41.0 % (most bytes now in the 1MiB bucket): predicted to save 20.0 %";
  event.in_force_knobs = "chunk_size=512KiB;eager_threshold=4KiB";
  event.candidate_knobs = "chunk_size=1MiB;eager_threshold=4KiB";
  event.predicted_margin = 0.2;
  // In force over candidate: the candidate's pass takes 0.8 of the old one.
  event.paired_median = 1.25;
  event.paired_low = 1.2;
  event.paired_high = 1.3;
  event.pairs = 6;
  event.verdict = "faster";
  return event;
}

TEST(WatchModelTest, KnobChangeListsOnlyTheKnobsThatDiffer) {
  EXPECT_EQ(DescribeKnobChange("chunk_size=512KiB;eager_threshold=4KiB",
                               "chunk_size=1MiB;eager_threshold=4KiB"),
            "chunk_size 512KiB->1MiB");
  EXPECT_EQ(DescribeKnobChange("chunk_size=512KiB;eager_threshold=4KiB",
                               "chunk_size=1MiB;eager_threshold=16KiB"),
            "chunk_size 512KiB->1MiB, eager_threshold 4KiB->16KiB");
  EXPECT_EQ(DescribeKnobChange("chunk_size=1MiB", "chunk_size=1MiB"), "");
  EXPECT_EQ(DescribeKnobChange("chunk_size=1MiB", "chunk_size=1MiB;polling=busy"),
            "polling ?->busy");
  EXPECT_EQ(DescribeKnobChange("not a key", "chunk_size=1MiB"), "not a key -> chunk_size=1MiB");
}

TEST(WatchModelTest, APushShowsItsChangePredictedAndMeasuredSaving) {
  const WatchEventLine line = DescribeWatchEvent(Push(7));
  EXPECT_EQ(line.id, 7);
  EXPECT_EQ(line.time, "11-27 16:40:12");
  EXPECT_EQ(line.action, "push");
  EXPECT_EQ(line.change, "chunk_size 512KiB->1MiB");
  EXPECT_EQ(line.predicted, "20.0%");
  EXPECT_EQ(line.measured, "20.0%");  // 1 - 1/1.25
  EXPECT_EQ(line.action_style, Style::kGood);
  EXPECT_EQ(line.measured_style, Style::kGood);
}

TEST(WatchModelTest, ARollBackShowsTheSavingOfGoingBack) {
  // The re-check measured the config before the push (first) over the pushed one
  // (second, in force): 0.8, the pushed one takes 1.25 times as long. Going back
  // saves 20 % of the pushed config's pass.
  db::WatchEventRecord event = Push(8);
  event.action = db::WatchAction::kRollBack;
  event.reason = "re-check: the changed config measured slower than the one before";
  event.in_force_knobs = "chunk_size=1MiB;eager_threshold=4KiB";
  event.candidate_knobs = "chunk_size=512KiB;eager_threshold=4KiB";
  event.predicted_margin = 0;
  event.paired_median = 0.8;
  event.verdict = "slower";
  const WatchEventLine line = DescribeWatchEvent(event);
  EXPECT_EQ(line.action, "roll_back");
  EXPECT_EQ(line.change, "chunk_size 1MiB->512KiB");
  EXPECT_EQ(line.predicted, "-");
  EXPECT_EQ(line.measured, "20.0%");
  EXPECT_EQ(line.action_style, Style::kError);
  EXPECT_EQ(line.measured_style, Style::kGood);
}

TEST(WatchModelTest, ARecheckThatKeepsShowsThePushsSaving) {
  db::WatchEventRecord event = Push(9);
  event.action = db::WatchAction::kKeep;
  event.reason = "re-check: the changed config holds against the one before";
  event.candidate_knobs = "";
  event.predicted_margin = 0;
  event.paired_median = 1.0 / 0.9;  // the pushed config takes 0.9 of the one before
  const WatchEventLine line = DescribeWatchEvent(event);
  EXPECT_EQ(line.change, "");
  EXPECT_EQ(line.predicted, "-");
  EXPECT_EQ(line.measured, "10.0%");
}

TEST(WatchModelTest, AKeptPredictionMeasuredSlowerShowsANegativeSaving) {
  db::WatchEventRecord event = Push(10);
  event.action = db::WatchAction::kKeep;
  event.paired_median = 0.8;  // the candidate took 1.25 times as long
  event.verdict = "slower";
  const WatchEventLine line = DescribeWatchEvent(event);
  EXPECT_EQ(line.predicted, "20.0%");
  EXPECT_EQ(line.measured, "-25.0%");
  EXPECT_EQ(line.measured_style, Style::kWarn);
}

TEST(WatchModelTest, NothingMeasuredOrPredictedShowsDashes) {
  db::WatchEventRecord event;
  event.id = 1;
  event.at = "2026-11-27T16:00:00.000Z";
  event.servers = "127.0.0.1:7001";
  event.action = db::WatchAction::kBaseline;
  event.reason = "reference profile: 4096 messages";
  event.in_force_knobs = "chunk_size=512KiB";
  const WatchEventLine line = DescribeWatchEvent(event);
  EXPECT_EQ(line.change, "");
  EXPECT_EQ(line.predicted, "-");
  EXPECT_EQ(line.measured, "-");
  EXPECT_EQ(line.action_style, Style::kDim);
}

Canvas DrawWatchScreen(const WatchPanel& panel, int width = 80, int height = 24) {
  Canvas canvas(width, height);
  UiState ui;
  ui.view = View::kWatch;
  Frame frame;
  frame.watch = panel;
  DrawScreen(frame, ui, canvas);
  return canvas;
}

TEST(WatchViewTest, ListsTheDecisionsNewestFirstWithTheirEvidence) {
  WatchPanel panel;
  panel.store_path = "/data/artune.db";
  panel.total = 30;
  for (int64_t id = 30; id > 0; --id) panel.events.push_back(Push(id));
  const Canvas canvas = DrawWatchScreen(panel);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "5 watch")) << text;
  EXPECT_TRUE(Contains(canvas, "store /data/artune.db")) << text;
  EXPECT_TRUE(Contains(canvas, "   ID  TIME (UTC)      ACTION    PREDICTED  MEASURED  SERVER"))
      << text;
  EXPECT_TRUE(
      Contains(canvas, "   30  11-27 16:40:12  push          20.0%     20.0%  127.0.0.1:7001"))
      << text;
  EXPECT_TRUE(Contains(canvas, "       chunk_size 512KiB->1MiB")) << text;
  EXPECT_TRUE(Contains(canvas, "       drift 41.0 % (most bytes now in the 1MiB bucket)")) << text;
  // Newest first, and only what fits: the title says how many.
  EXPECT_LT(text.find("   30  "), text.find("   29  ")) << text;
  EXPECT_FALSE(Contains(canvas, "   24  ")) << text;
  EXPECT_TRUE(Contains(canvas, "Watch decisions (30), newest ")) << text;
  EXPECT_TRUE(Contains(canvas, "q quit")) << text;
}

TEST(WatchViewTest, ATallerTerminalShowsMoreDecisions) {
  WatchPanel panel;
  panel.total = 30;
  for (int64_t id = 30; id > 0; --id) panel.events.push_back(Push(id));
  const Canvas canvas = DrawWatchScreen(panel, 120, 60);
  EXPECT_TRUE(Contains(canvas, "   15  ")) << canvas.Text();
}

TEST(WatchViewTest, WithoutDecisionsSaysHowToMakeThem) {
  WatchPanel panel;
  panel.store_path = "/data/artune.db";
  const Canvas canvas = DrawWatchScreen(panel);
  EXPECT_TRUE(Contains(canvas, "Watch decisions (0)")) << canvas.Text();
  EXPECT_TRUE(Contains(canvas, "none yet: artune watch run")) << canvas.Text();
}

TEST(WatchViewTest, AnUnreadableStoreIsShown) {
  WatchPanel panel;
  panel.store_path = "/nowhere/artune.db";
  panel.error = "no store yet: artune watch run records its decisions there (or --db)";
  const Canvas canvas = DrawWatchScreen(panel);
  EXPECT_TRUE(Contains(canvas, "no store yet: artune watch run")) << canvas.Text();
}

}  // namespace
}  // namespace artune::dashboard
