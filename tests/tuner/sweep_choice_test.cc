// The chosen config among a sweep's trials (sweep_choice.h): the sweep report and
// `apply config --sweep` must name the same trial.
#include "artune/tuner/sweep_choice.h"

#include <gtest/gtest.h>

namespace artune::tuner {
namespace {

db::TrialRecord Trial(int64_t id, const std::string& eager) {
  db::TrialRecord trial;
  trial.id = id;
  trial.knobs = {{"eager_threshold", eager}};
  trial.status = db::TrialStatus::kOk;
  trial.validated = true;
  return trial;
}

TEST(ChosenAmong, TheVerdictsKnobsPickTheTrialOverTheSearchsBest) {
  const std::vector<db::TrialRecord> trials = {Trial(1, "4KiB"), Trial(2, "16KiB")};
  db::SweepRecord sweep;
  sweep.verdict = db::SweepVerdict{};
  sweep.verdict->verdict = db::Verdict::kBeatsDefault;
  sweep.verdict->best_knobs = db::TrialKnobKey(trials[1].knobs);
  const auto chosen = ChosenAmong(sweep, trials, trials[0]);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->id, 2);
}

TEST(ChosenAmong, WithoutAVerdictOrAMatchingTrialTheSearchsBestStands) {
  const std::vector<db::TrialRecord> trials = {Trial(1, "4KiB"), Trial(2, "16KiB")};
  db::SweepRecord sweep;
  EXPECT_EQ(ChosenAmong(sweep, trials, trials[0])->id, 1);
  sweep.verdict = db::SweepVerdict{};
  sweep.verdict->verdict = db::Verdict::kWithinNoise;
  sweep.verdict->best_knobs = "eager_threshold=64KiB";
  EXPECT_EQ(ChosenAmong(sweep, trials, trials[0])->id, 1);
  EXPECT_FALSE(ChosenAmong(sweep, trials, std::nullopt));
}

}  // namespace
}  // namespace artune::tuner
