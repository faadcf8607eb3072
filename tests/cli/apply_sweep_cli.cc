// `artune apply compare` and `artune apply config` reading a stored sweep: the compare
// replays with the inflight the sweep measured with (the regime it tuned for) unless
// --inflight says otherwise, and both apply the config the sweep's verdict chose at
// its final re-measurement, which need not be the best single trial of the search.
// Stores are made with a real `artune sweep` or written through the db::Store API.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "../sample_records.h"
#include "apply_cli_fixture.h"
#include "artune/db/store.h"

namespace {

using namespace artune_cli_test;

// A compare short enough for CI: one repeat of one pass of the skew scheme on tcp.
constexpr const char* kQuickCompare =
    "apply compare --scheme skew --fabric tcp --repeats 1 --rounds 1 --warmup-rounds 0";

class ApplySweepCliTest : public ApplyCliTest {
 protected:
  // A finished sweep over eager_threshold with two validated trials: 4KiB measured
  // best (objective 10) and 64KiB (objective 12). `verdict_knobs`: the knobs the
  // stored verdict picked ("" stores no verdict). `inflight`: the stored parameter
  // ("" stores none).
  int64_t WriteSweep(const std::string& verdict_knobs, const std::string& inflight) {
    auto opened = artune::db::Store::Open(StorePath());
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (!opened.ok()) return 0;
    artune::db::Store& store = **opened;
    artune::db::SweepRecord sweep = artune::samples::GridSweep();
    sweep.objective = "workload-time";
    sweep.search_space = "eager_threshold=4KiB,16KiB,64KiB";
    sweep.default_knobs = "eager_threshold=16KiB";
    if (!inflight.empty()) sweep.parameters["inflight"] = inflight;
    auto sweep_id = store.InsertSweep(sweep);
    EXPECT_TRUE(sweep_id.ok()) << sweep_id.status().ToString();
    if (!sweep_id.ok()) return 0;
    auto trial = [&](const std::string& eager, double objective) {
      artune::db::TrialRecord record =
          artune::samples::MeasuredTrial({{"eager_threshold", eager}}, objective);
      record.sweep_id = *sweep_id;
      record.ci_low = objective - 0.5;  // the interval `results --sweep` prints
      record.ci_high = objective + 0.5;
      return record;
    };
    for (const auto& [eager, objective] :
         std::map<std::string, double>{{"4KiB", 10}, {"16KiB", 14}, {"64KiB", 12}}) {
      auto inserted = store.InsertTrial(trial(eager, objective));
      EXPECT_TRUE(inserted.ok()) << inserted.status().ToString();
    }
    if (!verdict_knobs.empty()) {
      artune::db::SweepVerdict verdict;
      verdict.verdict = artune::db::Verdict::kBeatsDefault;
      verdict.best_knobs = verdict_knobs;
      verdict.default_remeasured = trial("16KiB", 14.5);
      verdict.best_remeasured = trial("64KiB", 11.5);
      verdict.best_remeasured->knobs = *artune::db::ParseTrialKnobKey(verdict_knobs);
      const auto recorded = store.RecordSweepVerdict(*sweep_id, verdict);
      EXPECT_TRUE(recorded.ok()) << recorded.ToString();
    }
    EXPECT_TRUE(store.FinishSweep(*sweep_id).ok());
    return *sweep_id;
  }

  // The id of the sweep's trial with this eager_threshold (0 when none).
  int64_t TrialId(int64_t sweep, const std::string& eager) const {
    auto opened = artune::db::Store::Open(StorePath(), artune::db::OpenMode::kExisting);
    if (!opened.ok()) return 0;
    auto trials = (*opened)->ListTrials(sweep);
    if (!trials.ok()) return 0;
    for (const artune::db::TrialRecord& trial : *trials) {
      if (trial.knobs.at("eager_threshold") == eager) return trial.id;
    }
    return 0;
  }
};

TEST_F(ApplySweepCliTest, CompareReplaysWithTheInflightTheSweepMeasuredWith) {
  // A real sweep, measured with 2 calls in flight.
  Outcome o =
      Run("sweep --scheme skew --objective workload-time --knob eager_threshold=4KiB,16KiB "
          "--fabric tcp --warmup 0 --duration 0.05 --repeats 1 --inflight 2 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const int64_t sweep = json::parse(o.out).at("sweep_id");

  o = Run(std::string(kQuickCompare) + " --sweep " + std::to_string(sweep) + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  json result = json::parse(o.out);
  EXPECT_EQ(result.at("inflight"), 2);
  EXPECT_EQ(result.at("inflight_source"), "sweep");

  // The text header says so too.
  o = Run(std::string(kQuickCompare) + " --sweep " + std::to_string(sweep));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("inflight  2 calls (as sweep " + std::to_string(sweep) + " measured)"),
            std::string::npos)
      << o.out;

  // An explicit --inflight wins over the sweep's.
  o = Run(std::string(kQuickCompare) + " --sweep " + std::to_string(sweep) +
          " --inflight 3 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  result = json::parse(o.out);
  EXPECT_EQ(result.at("inflight"), 3);
  EXPECT_EQ(result.at("inflight_source"), "flag");
}

TEST_F(ApplySweepCliTest, CompareWithoutASweepReplaysWithTheSweepsDefaultInflight) {
  Outcome o = Run("apply config --set eager_threshold=64KiB");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = Run(std::string(kQuickCompare) + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json result = json::parse(o.out);
  EXPECT_EQ(result.at("inflight"), 8);
  EXPECT_EQ(result.at("inflight_source"), "default");
}

TEST_F(ApplySweepCliTest, ASweepWithoutAUsableInflightFallsBackWithANote) {
  for (const std::string stored : {"", "many", "0"}) {
    const int64_t sweep = WriteSweep("", stored);
    const Outcome o =
        Run(std::string(kQuickCompare) + " --sweep " + std::to_string(sweep) + " --json");
    ASSERT_EQ(o.exit_code, 0) << "stored '" << stored << "': " << o.err;
    const json result = json::parse(o.out);
    EXPECT_EQ(result.at("inflight"), 8) << "stored '" << stored << "'";
    EXPECT_EQ(result.at("inflight_source"), "default") << "stored '" << stored << "'";
    EXPECT_NE(o.err.find("note: sweep " + std::to_string(sweep)), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("replaying with 8 calls in flight"), std::string::npos) << o.err;
  }
}

TEST_F(ApplySweepCliTest, ApplyConfigTakesTheConfigTheVerdictChoseOverTheBestTrial) {
  // 4KiB is the best single trial; the final re-measurement chose 64KiB.
  const int64_t sweep = WriteSweep("eager_threshold=64KiB", "8");
  Outcome o = Run("apply config --sweep " + std::to_string(sweep) + " --dry-run --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  json report = json::parse(o.out);
  EXPECT_EQ(report.at("config").at("eager_threshold"), "64KiB");
  EXPECT_EQ(report.at("winner").at("chosen_by"), "final_remeasurement");
  EXPECT_EQ(report.at("winner").at("knobs"), "eager_threshold=64KiB");
  EXPECT_EQ(report.at("winner").at("trial_id"), TrialId(sweep, "64KiB"));
  EXPECT_EQ(report.at("objective_value"), 12);

  o = Run("apply config --sweep " + std::to_string(sweep));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("from sweep " + std::to_string(sweep) +
                       " winner: eager_threshold=64KiB, chosen by the sweep's final "
                       "re-measurement (workload-time 12"),
            std::string::npos)
      << o.out;
  // Written where the transport reads it.
  EXPECT_EQ(ShownKnob("eager_threshold").at("value"), 64 * 1024);
}

// results --sweep calls the config `apply config` writes "chosen" everywhere (the
// line, the trial table, the heatmap's star) and names the search's best trial as
// such; its JSON keeps the field names scripts read.
TEST_F(ApplySweepCliTest, ResultsSweepNamesTheChosenConfigAndTheSearchsBestTrial) {
  // 4KiB is the best single trial; the final re-measurement chose 64KiB.
  const int64_t sweep = WriteSweep("eager_threshold=64KiB", "8");
  const Outcome shown = Run("results --sweep " + std::to_string(sweep));
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("Chosen   eager_threshold=64KiB  12.00 [11.50, 12.50]  (`artune apply "
                           "config --sweep " +
                           std::to_string(sweep) + "` writes it)"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("Search's best trial  eager_threshold=4KiB  10.00"), std::string::npos)
      << shown.out;
  EXPECT_EQ(shown.out.find("Winner"), std::string::npos) << shown.out;
  // The trial table's notes.
  std::istringstream lines(shown.out);
  std::map<std::string, std::string> note_of;
  for (std::string line; std::getline(lines, line);) {
    for (const char* eager : {"4KiB", "16KiB", "64KiB"}) {
      if (line.find("eager_threshold=" + std::string(eager) + " ") != std::string::npos &&
          line.find(" ok ") != std::string::npos) {
        note_of[eager] = line;
      }
    }
  }
  EXPECT_NE(note_of["64KiB"].find("chosen"), std::string::npos) << shown.out;
  EXPECT_NE(note_of["4KiB"].find("search's best"), std::string::npos) << shown.out;
  EXPECT_NE(note_of["16KiB"].find("default"), std::string::npos) << shown.out;
  EXPECT_EQ(note_of["4KiB"].find("chosen"), std::string::npos) << shown.out;

  const Outcome as_json = Run("results --sweep " + std::to_string(sweep) + " --json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out).at("best").at("knobs").at("eager_threshold"), "64KiB");
}

TEST_F(ApplySweepCliTest, ApplyConfigTakesTheBestTrialWhenNoVerdictNamesOne) {
  const int64_t sweep = WriteSweep("", "8");
  Outcome o = Run("apply config --sweep " + std::to_string(sweep) + " --dry-run --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json report = json::parse(o.out);
  EXPECT_EQ(report.at("config").at("eager_threshold"), "4KiB");
  EXPECT_EQ(report.at("winner").at("chosen_by"), "best_trial");
  EXPECT_EQ(report.at("winner").at("trial_id"), TrialId(sweep, "4KiB"));

  o = Run("apply config --sweep " + std::to_string(sweep) + " --dry-run");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("winner: eager_threshold=4KiB, best trial #" +
                       std::to_string(TrialId(sweep, "4KiB"))),
            std::string::npos)
      << o.out;
}

TEST_F(ApplySweepCliTest, CompareTakesTheVerdictsChoiceOverTheBaseline) {
  const int64_t sweep = WriteSweep("eager_threshold=64KiB", "2");
  const std::string baseline = dir_ + "/baseline.toml";
  {
    std::ofstream out(baseline);
    out << "pipeline_depth = 8\n";
  }
  const Outcome o = Run(std::string(kQuickCompare) + " --sweep " + std::to_string(sweep) +
                        " --baseline " + baseline + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json result = json::parse(o.out);
  const json& tuned = result.at("tuned");
  EXPECT_EQ(tuned.at("config").at("eager_threshold"), "64KiB");
  EXPECT_EQ(tuned.at("config").at("pipeline_depth"),
            result.at("default").at("config").at("pipeline_depth"))
      << "the winner is laid over the baseline";
  EXPECT_EQ(result.at("default").at("config").at("pipeline_depth"), "8");
  EXPECT_EQ(tuned.at("sweep_winner").at("chosen_by"), "final_remeasurement");
  EXPECT_EQ(tuned.at("sweep_winner").at("trial_id"), TrialId(sweep, "64KiB"));
  EXPECT_NE(
      tuned.at("source").get<std::string>().find("chosen by the sweep's final re-measurement"),
      std::string::npos)
      << tuned.at("source");
  EXPECT_EQ(result.at("inflight"), 2);
}

}  // namespace
