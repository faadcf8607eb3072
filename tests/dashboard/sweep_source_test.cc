// SweepSource over a real store file: waits for a sweep to exist, follows the
// latest one, sees trials committed after it first read (WAL: the writer's
// connection stays open the whole time), and reports a missing sweep.
#include "sweep_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "../sample_records.h"
#include "store_file_test.h"

namespace artune::dashboard {
namespace {

class SweepSourceTest : public StoreFileTest {
 protected:
  std::unique_ptr<db::Store> OpenWriter() {
    auto store = db::Store::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status().message();
    return std::move(*store);
  }

  static int64_t InsertSweep(db::Store& store, const std::string& goal) {
    auto id = store.InsertSweep(samples::GridSweep(goal));
    EXPECT_TRUE(id.ok()) << id.status().message();
    return *id;
  }

  static void InsertTrial(db::Store& store, int64_t sweep_id, const std::string& eager,
                          const std::string& chunk, double objective) {
    db::TrialRecord trial =
        samples::MeasuredTrial({{"eager_threshold", eager}, {"chunk_size", chunk}}, objective);
    trial.sweep_id = sweep_id;
    auto id = store.InsertTrial(trial);
    ASSERT_TRUE(id.ok()) << id.status().message();
  }
};

TEST_F(SweepSourceTest, MissingStoreIsAnErrorTextNotAFailure) {
  SweepSource source(path_, SweepSelector{});
  SweepPanel panel = source.Poll();
  EXPECT_TRUE(panel.configured);
  EXPECT_FALSE(panel.summary);
  EXPECT_FALSE(panel.error.empty());
}

TEST_F(SweepSourceTest, FollowsTheLatestSweepAndItsNewTrials) {
  auto writer = OpenWriter();
  SweepSource source(path_, SweepSelector{});
  SweepPanel panel = source.Poll();
  EXPECT_FALSE(panel.summary);
  EXPECT_NE(panel.error.find("no sweep"), std::string::npos) << panel.error;

  const int64_t first = InsertSweep(*writer, "min");
  InsertTrial(*writer, first, "4KiB", "64KiB", 20);
  panel = source.Poll();
  ASSERT_TRUE(panel.summary) << panel.error;
  EXPECT_EQ(panel.summary->id, first);
  EXPECT_EQ(panel.summary->done, 1u);
  EXPECT_FALSE(panel.summary->finished);

  InsertTrial(*writer, first, "256B", "64KiB", 10);
  panel = source.Poll();
  ASSERT_TRUE(panel.summary);
  EXPECT_EQ(panel.summary->done, 2u);
  ASSERT_TRUE(panel.summary->best);
  EXPECT_DOUBLE_EQ(panel.summary->best->objective, 10);
  EXPECT_TRUE(panel.summary->cells[0][0].chosen);

  ASSERT_TRUE(writer->FinishSweep(first).ok());
  EXPECT_TRUE(source.Poll().summary->finished);

  const int64_t second = InsertSweep(*writer, "max");
  panel = source.Poll();
  ASSERT_TRUE(panel.summary);
  EXPECT_EQ(panel.summary->id, second);
  EXPECT_EQ(panel.summary->done, 0u);
}

TEST_F(SweepSourceTest, TheStoredVerdictShowsOnceTheSweepIsFinished) {
  auto writer = OpenWriter();
  const int64_t id = InsertSweep(*writer, "min");
  InsertTrial(*writer, id, "4KiB", "64KiB", 20);
  db::SweepVerdict verdict;
  verdict.verdict = db::Verdict::kWithinNoise;
  verdict.best_knobs = "chunk_size=64KiB;eager_threshold=4KiB";
  const db::TrialRecord again =
      samples::MeasuredTrial({{"eager_threshold", "16KiB"}, {"chunk_size", "512KiB"}}, 21);
  verdict.default_remeasured = again;
  db::TrialRecord best_again = again;
  best_again.knobs = {{"eager_threshold", "4KiB"}, {"chunk_size", "64KiB"}};
  best_again.objective = 20.5;
  verdict.best_remeasured = best_again;
  ASSERT_TRUE(writer->RecordSweepVerdict(id, verdict).ok());

  SweepSource source(path_, SweepSelector{id});
  SweepPanel panel = source.Poll();
  ASSERT_TRUE(panel.summary) << panel.error;
  EXPECT_EQ(panel.summary->verdict, std::nullopt) << "shown before the sweep finished";
  EXPECT_FALSE(panel.summary->default_remeasured);
  EXPECT_FALSE(panel.summary->best_remeasured);

  ASSERT_TRUE(writer->FinishSweep(id).ok());
  panel = source.Poll();
  ASSERT_TRUE(panel.summary) << panel.error;
  EXPECT_EQ(panel.summary->verdict, db::Verdict::kWithinNoise);
  ASSERT_TRUE(panel.summary->default_remeasured);
  EXPECT_DOUBLE_EQ(panel.summary->default_remeasured->objective, 21);
  EXPECT_EQ(panel.summary->default_remeasured->knobs, again.knobs);
  ASSERT_TRUE(panel.summary->best_remeasured);
  EXPECT_DOUBLE_EQ(panel.summary->best_remeasured->objective, 20.5);
  EXPECT_EQ(panel.summary->best_remeasured->knobs, best_again.knobs);
  ASSERT_TRUE(panel.summary->chosen);  // the verdict's best_knobs, read from the store
  EXPECT_EQ(panel.summary->chosen->knobs, best_again.knobs);
}

TEST_F(SweepSourceTest, AGivenIdStaysOnThatSweep) {
  auto writer = OpenWriter();
  const int64_t first = InsertSweep(*writer, "min");
  InsertSweep(*writer, "max");
  SweepSource source(path_, SweepSelector{first});
  SweepPanel panel = source.Poll();
  ASSERT_TRUE(panel.summary) << panel.error;
  EXPECT_EQ(panel.summary->id, first);

  SweepSource missing(path_, SweepSelector{first + 100});
  panel = missing.Poll();
  EXPECT_FALSE(panel.summary);
  EXPECT_FALSE(panel.error.empty());
}

TEST(SweepInputTest, AGridSweepPlansEveryPointOfItsSearchSpace) {
  db::SweepRecord sweep;
  sweep.id = 4;
  sweep.strategy = "grid";
  sweep.search_space = "eager_threshold=256B..4KiB:x16 chunk_size=64KiB,1MiB";
  SweepInput input = SweepInputFromRecords(sweep, {});
  ASSERT_TRUE(input.planned_trials);
  EXPECT_EQ(*input.planned_trials, 4u);
  EXPECT_EQ(input.planned_axes.at("eager_threshold"), (std::vector<std::string>{"256", "4KiB"}));
  EXPECT_EQ(input.planned_axes.at("chunk_size"), (std::vector<std::string>{"64KiB", "1MiB"}));
  // The heatmap has every planned cell, none measured yet.
  SweepSummary summary = SummarizeSweep(input);
  ASSERT_EQ(summary.cells.size(), 2u);
  ASSERT_EQ(summary.cells[0].size(), 2u);
  EXPECT_FALSE(summary.cells[1][1].measured);

  // An adaptive sweep stops early: no plan, no ETA, but the axes.
  sweep.strategy = "adaptive";
  input = SweepInputFromRecords(sweep, {});
  EXPECT_FALSE(input.planned_trials);
  EXPECT_EQ(input.planned_axes.size(), 2u);
}

TEST(SearchAxisTest, ReadsLaddersAndLists) {
  auto ladder = ParseSearchAxis("eager_threshold=256B..256KiB:x4");
  ASSERT_TRUE(ladder);
  EXPECT_EQ(ladder->knob, "eager_threshold");
  EXPECT_EQ(ladder->values,
            (std::vector<std::string>{"256", "1KiB", "4KiB", "16KiB", "64KiB", "256KiB"}));
  auto list = ParseSearchAxis("chunk_size=64KiB,1MiB");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->values, (std::vector<std::string>{"64KiB", "1MiB"}));
  for (const char* bad : {"eager_threshold", "nosuchknob=1,2", "chunk_size=1MiB..64KiB",
                          "chunk_size=64KiB..1MiB:x1", "chunk_size=a,b"}) {
    EXPECT_FALSE(ParseSearchAxis(bad)) << bad;
  }
}

TEST(SweepSelectorTest, ParsesLatestAndIds) {
  auto latest = ParseSweepSelector("latest");
  ASSERT_TRUE(latest.ok());
  EXPECT_FALSE(latest->id);
  auto id = ParseSweepSelector("12");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->id, 12);
  for (const char* bad : {"", "0", "-3", "12x", "newest"}) {
    EXPECT_FALSE(ParseSweepSelector(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace artune::dashboard
