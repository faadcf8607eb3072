#include "artune/report/sweep_report.h"

#include <gtest/gtest.h>

#include <string>

#include "../sample_records.h"
#include "artune/report/svg.h"
#include "occurrences.h"

namespace artune::report {
namespace {

db::TrialRecord Trial(int64_t id, std::string eager, std::string chunk, double objective,
                      db::TrialStatus status = db::TrialStatus::kOk) {
  db::TrialRecord trial;
  trial.id = id;
  trial.sweep_id = 1;
  trial.knobs = {{"eager_threshold", std::move(eager)}, {"chunk_size", std::move(chunk)}};
  trial.status = status;
  trial.validated = trial.status == db::TrialStatus::kOk;
  trial.objective = objective;
  trial.ci_low = objective - 1;
  trial.ci_high = objective + 1;
  trial.samples = 5;
  trial.metrics = {{"p50_us", objective}};
  return trial;
}

// A finished grid sweep whose workload name must be escaped in the HTML.
db::SweepRecord Sweep() {
  db::SweepRecord sweep = samples::GridSweep();
  sweep.id = 4;
  sweep.created_at = "2024-05-01T10:00:00Z";
  sweep.finished_at = "2024-05-01T10:05:00Z";
  sweep.workload = "capture:<3>";
  return sweep;
}

// Sweep() with its stored verdict: `verdict`, judging the config `best_knobs`.
db::SweepRecord DecidedSweep(db::Verdict verdict, const std::string& best_knobs) {
  db::SweepRecord sweep = Sweep();
  sweep.verdict = db::SweepVerdict{.verdict = verdict, .best_knobs = best_knobs};
  return sweep;
}

// The defaults (50), the search's best trial 4KiB (44), and 8KiB (45) close behind.
std::vector<db::TrialRecord> ThreeTrials() {
  return {Trial(1, "16KiB", "512KiB", 50), Trial(2, "4KiB", "64KiB", 44),
          Trial(3, "8KiB", "64KiB", 45)};
}

TEST(ChooseHeatmapAxes, PrefersEagerThresholdByChunkSize) {
  db::TrialRecord trial;
  trial.knobs = {{"chunk_size", "1MiB"}, {"eager_threshold", "4KiB"}, {"pipeline_depth", "4"}};
  HeatmapAxes axes = ChooseHeatmapAxes({trial});
  EXPECT_EQ(axes.row, "eager_threshold");
  EXPECT_EQ(axes.column, "chunk_size");
  trial.knobs = {{"chunk_size", "1MiB"}};
  axes = ChooseHeatmapAxes({trial});
  EXPECT_EQ(axes.row, "chunk_size");
  EXPECT_EQ(axes.column, "");
  trial.knobs = {{"queue_depth", "64"}, {"inline_size", "128"}};
  axes = ChooseHeatmapAxes({trial});
  EXPECT_EQ(axes.row, "inline_size");
  EXPECT_EQ(axes.column, "queue_depth");
  EXPECT_EQ(ChooseHeatmapAxes({}).row, "");
}

TEST(SweepReportHtml, HeatmapOrdersValuesBySizeAndMarksTheChosenConfig) {
  const std::vector<db::TrialRecord> trials = {
      Trial(1, "16KiB", "512KiB", 55),
      Trial(2, "4KiB", "512KiB", 47),
      Trial(3, "16KiB", "64KiB", 50),
      Trial(4, "4KiB", "64KiB", 41.5),
      Trial(5, "1MiB", "64KiB", 0, db::TrialStatus::kInvalid),
  };
  const std::string html = SweepReportHtml(Sweep(), trials, trials[3]);
  // Rows 4KiB, 16KiB, 1MiB (by size, not by text); the chosen cell is row 0, column 0
  // of the grid that starts at x=140, y=64.
  const size_t row_4k = html.find(">4KiB</text>");
  const size_t row_16k = html.find(">16KiB</text>");
  const size_t row_1m = html.find(">1MiB</text>");
  ASSERT_NE(row_4k, std::string::npos);
  EXPECT_LT(row_4k, row_16k);
  EXPECT_LT(row_16k, row_1m);
  EXPECT_NE(html.find("<rect x=\"141.5\" y=\"65.5\""), std::string::npos);
  EXPECT_EQ(Count(html, "★"), 1u);
  EXPECT_NE(html.find("eager_threshold 4KiB, chunk_size 64KiB: latency-p50 41.5 (95% CI 40.5 .. "
                      "42.5, 5 samples) — chosen</title>"),
            std::string::npos);
  EXPECT_NE(html.find("fill=\"" + RampColour(1) + "\""), std::string::npos);
  // The invalid point is hatched and says why.
  EXPECT_NE(html.find("eager_threshold 1MiB, chunk_size 64KiB: invalid</title>"),
            std::string::npos);
}

TEST(SweepReportHtml, ComparesTheChosenConfigWithTheDefaultsAndHighlightsIt) {
  const std::vector<db::TrialRecord> trials = {Trial(1, "16KiB", "512KiB", 50),
                                               Trial(2, "4KiB", "64KiB", 40)};
  const std::string html = SweepReportHtml(Sweep(), trials, trials[1]);
  EXPECT_NE(html.find("Chosen: chunk_size=64KiB, eager_threshold=4KiB, latency-p50 40 against "
                      "50 with the defaults (-20.0%). `artune apply config --sweep 4` writes "
                      "this config."),
            std::string::npos);
  EXPECT_NE(html.find("<tr class=\"best\"><td>chosen</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>default</td><td>chunk_size=512KiB, eager_threshold=16KiB</td>"),
            std::string::npos);
  // In the trials table the chosen config's row (trial 2) is highlighted.
  EXPECT_NE(html.find("<tr class=\"best\"><td class=\"num\">2</td>"), std::string::npos);
  EXPECT_NE(html.find("capture:&lt;3&gt;"), std::string::npos);
}

TEST(SweepReportHtml, StatesTheStoredVerdictWithTheDefaultMeasuredAgain) {
  const std::vector<db::TrialRecord> trials = {Trial(1, "16KiB", "512KiB", 50),
                                               Trial(2, "4KiB", "64KiB", 49)};
  db::SweepRecord sweep =
      DecidedSweep(db::Verdict::kWithinNoise, "chunk_size=64KiB;eager_threshold=4KiB");
  sweep.verdict->default_remeasured = Trial(0, "16KiB", "512KiB", 48.5);
  const std::string html = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_NE(html.find("Verdict: Within noise: the chosen config does not beat the defaults"),
            std::string::npos);
  EXPECT_NE(html.find("the defaults gave latency-p50 48.5 (95% CI 47.5 .. 49.5)."),
            std::string::npos);
  EXPECT_NE(html.find("<td>default, again</td><td>chunk_size=512KiB, eager_threshold=16KiB</td>"
                      "<td class=\"num\">48.5</td>"),
            std::string::npos);
  EXPECT_NE(html.find("within_noise"), std::string::npos);

  sweep.verdict->verdict = db::Verdict::kBeatsDefault;
  sweep.verdict->default_remeasured->status = db::TrialStatus::kFailed;
  sweep.verdict->default_remeasured->error = "peer <gone>";
  const std::string failed = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_NE(failed.find("The chosen config beats the defaults beyond noise"), std::string::npos);
  EXPECT_NE(
      failed.find("The defaults measured again after the search: failed (peer &lt;gone&gt;)."),
      std::string::npos);
  EXPECT_NE(failed.find("<td>default, again</td><td>chunk_size=512KiB, eager_threshold=16KiB</td>"
                        "<td class=\"num\">-</td><td class=\"num\">-</td>"),
            std::string::npos);

  // Without a stored verdict the report says why.
  sweep.verdict.reset();
  EXPECT_NE(SweepReportHtml(sweep, trials, trials[1]).find("Not stored: this sweep ran before"),
            std::string::npos);
  sweep.finished_at.clear();
  EXPECT_NE(SweepReportHtml(sweep, trials, trials[1]).find("Not decided yet"), std::string::npos);
}

TEST(SweepReportHtml, ShowsTheChosenConfigMeasuredAgainBesideTheDefault) {
  const std::vector<db::TrialRecord> trials = ThreeTrials();
  db::SweepRecord sweep =
      DecidedSweep(db::Verdict::kBeatsDefault, "chunk_size=64KiB;eager_threshold=4KiB");
  sweep.verdict->best_remeasured = Trial(0, "4KiB", "64KiB", 46.5);
  sweep.verdict->default_remeasured = Trial(0, "16KiB", "512KiB", 49.5);
  std::string html = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_NE(html.find("Measured again together after the search, the chosen config gave "
                      "latency-p50 "
                      "46.5 (95% CI 45.5 .. 47.5) and the defaults gave latency-p50 49.5 (95% CI "
                      "48.5 .. 50.5)."),
            std::string::npos)
      << html;
  const size_t winner_again = html.find(
      "<td>chosen, again</td><td>chunk_size=64KiB, eager_threshold=4KiB</td>"
      "<td class=\"num\">46.5</td><td class=\"num\">45.5 .. 47.5</td>");
  const size_t default_again = html.find("<td>default, again</td>");
  EXPECT_NE(winner_again, std::string::npos) << html;
  EXPECT_LT(winner_again, default_again) << "the two re-measurements sit side by side";
  EXPECT_EQ(html.find("final re-measurement chose"), std::string::npos)
      << "the verdict judged the best trial itself";

  // The sweep chose another finalist than the search's best trial: the report says so.
  sweep.verdict->best_knobs = "chunk_size=64KiB;eager_threshold=8KiB";
  sweep.verdict->best_remeasured = Trial(0, "8KiB", "64KiB", 45.5);
  html = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_NE(html.find("The search&#39;s best trial was chunk_size=64KiB, eager_threshold=4KiB, "
                      "latency-p50 44; the sweep&#39;s final re-measurement chose the config "
                      "above over it."),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>chosen, again</td><td>chunk_size=64KiB, eager_threshold=8KiB</td>"),
            std::string::npos);

  // A failed re-measurement of the winner is stated, with no numbers in its row.
  sweep.verdict->best_remeasured->status = db::TrialStatus::kFailed;
  sweep.verdict->best_remeasured->error = "timeout";
  html = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_NE(html.find("The chosen config measured again after the search: failed (timeout). "
                      "Measured "
                      "again after the search, warm like the trials, the defaults gave "
                      "latency-p50 49.5"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>chosen, again</td><td>chunk_size=64KiB, eager_threshold=8KiB</td>"
                      "<td class=\"num\">-</td><td class=\"num\">-</td>"),
            std::string::npos);
}

// The final round chose 8KiB over the search's best trial (4KiB): the star, the
// highlighted rows and the name "chosen" go to 8KiB, the config `apply config`
// writes; 4KiB is named the search's best and not starred.
TEST(SweepReportHtml, StarsTheChosenConfigNotTheSearchsBestTrial) {
  const std::vector<db::TrialRecord> trials = ThreeTrials();
  const db::SweepRecord sweep =
      DecidedSweep(db::Verdict::kBeatsDefault, "chunk_size=64KiB;eager_threshold=8KiB");
  const std::string html = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_EQ(Count(html, "★"), 1u);
  EXPECT_NE(html.find("eager_threshold 8KiB, chunk_size 64KiB: latency-p50 45 (95% CI 44 .. 46, "
                      "5 samples) — chosen</title>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("5 samples) — search&#39;s best, not chosen</title>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"best\"><td>chosen</td><td>chunk_size=64KiB, "
                      "eager_threshold=8KiB</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>search&#39;s best</td><td>chunk_size=64KiB, eager_threshold=4KiB</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr class=\"best\"><td class=\"num\">3</td>"), std::string::npos);
  EXPECT_EQ(html.find("Winner"), std::string::npos);
  EXPECT_EQ(html.find("winner"), std::string::npos);
}

TEST(SweepReportHtml, EscapesErrorsAndKnobValues) {
  std::vector<db::TrialRecord> trials = {Trial(1, "<b>", "64KiB", 0, db::TrialStatus::kFailed)};
  trials[0].error = "peer said <script>x</script>";
  const std::string html = SweepReportHtml(Sweep(), trials, std::nullopt);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("peer said &lt;script&gt;x&lt;/script&gt;"), std::string::npos);
  // The failed trial's objective and interval are shown as absent, not as zeros.
  EXPECT_NE(html.find("<td>failed</td><td class=\"num\">-</td><td class=\"num\">-</td>"),
            std::string::npos);
  EXPECT_NE(html.find("No trial finished ok and validated: there is no config to choose."),
            std::string::npos);
}

TEST(SweepReportHtml, MaximisingSweepAndMissingDefaults) {
  db::SweepRecord sweep = Sweep();
  sweep.objective = "bandwidth";
  sweep.goal = "max";
  sweep.finished_at.clear();
  const std::vector<db::TrialRecord> trials = {Trial(1, "4KiB", "64KiB", 900),
                                               Trial(2, "4KiB", "1MiB", 1200)};
  const std::string html = SweepReportHtml(sweep, trials, trials[1]);
  EXPECT_NE(html.find("bandwidth (higher is better)"), std::string::npos);
  EXPECT_NE(html.find("not finished"), std::string::npos);
  EXPECT_NE(html.find("were not measured in this sweep."), std::string::npos);
  // 1200 is the best (and, with no verdict, the chosen), so its cell has the darkest
  // colour and the mark.
  EXPECT_EQ(Count(html, "★"), 1u);
  EXPECT_NE(html.find("chunk_size 1MiB: bandwidth 1200 (95% CI"), std::string::npos);
}

TEST(SweepReportHtml, EmptySweepSaysSo) {
  const std::string html = SweepReportHtml(Sweep(), {}, std::nullopt);
  EXPECT_NE(html.find("No trial has been stored for this sweep yet."), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace artune::report
