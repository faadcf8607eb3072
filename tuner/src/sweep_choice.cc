#include "artune/tuner/sweep_choice.h"

#include <vector>

namespace artune::tuner {

std::string SweepChoice::How() const {
  if (chosen_by_verdict) return "chosen by the sweep's final re-measurement";
  return "best trial #" + std::to_string(trial ? trial->id : 0);
}

std::string SweepChoice::KnobText() const {
  std::string text;
  for (const auto& [name, value] : knobs) {
    if (!text.empty()) text += " ";
    text += name + "=" + value;
  }
  return text;
}

Result<SweepChoice> ReadSweepChoice(db::Store& store, int64_t sweep_id) {
  SweepChoice winner;
  ARTUNE_ASSIGN_OR_RETURN(winner.sweep, store.GetSweep(sweep_id));
  const std::string sweep_name = "sweep " + std::to_string(sweep_id);
  if (winner.sweep.verdict && !winner.sweep.verdict->best_knobs.empty()) {
    const std::string& key = winner.sweep.verdict->best_knobs;
    auto knobs = db::ParseTrialKnobKey(key);
    if (!knobs.ok()) {
      return Status::Corruption(sweep_name + "'s verdict names '" + key +
                                "', which is not knob text (" + knobs.status().message() +
                                "); apply a trial with --set NAME=VALUE instead");
    }
    winner.knobs = std::move(*knobs);
    winner.chosen_by_verdict = true;
    ARTUNE_ASSIGN_OR_RETURN(std::vector<db::TrialRecord> trials, store.ListTrials(sweep_id));
    for (db::TrialRecord& trial : trials) {
      if (db::TrialKnobKey(trial.knobs) != key) continue;
      // The store keeps one trial per knob key; a verdict should never pick one that
      // failed, but a corrupting config must not be applied on its word.
      if (trial.status != db::TrialStatus::kOk || !trial.validated) {
        return Status::Corruption(
            sweep_name + "'s verdict picks " + key + ", but its trial #" +
            std::to_string(trial.id) + " is " + std::string(db::TrialStatusName(trial.status)) +
            (trial.validated ? "" : ", not validated") + "; see `artune results --sweep " +
            std::to_string(sweep_id) + "`");
      }
      winner.trial = std::move(trial);
      break;
    }
    return winner;
  }
  ARTUNE_ASSIGN_OR_RETURN(winner.trial, store.BestTrial(sweep_id));
  if (!winner.trial) {
    return Status::NotFound(sweep_name + " has no validated trial to apply; see `artune results " +
                            "--sweep " + std::to_string(sweep_id) + "`");
  }
  winner.knobs = winner.trial->knobs;
  return winner;
}

std::optional<db::TrialRecord> ChosenAmong(const db::SweepRecord& sweep,
                                           const std::vector<db::TrialRecord>& trials,
                                           const std::optional<db::TrialRecord>& search_best) {
  if (sweep.verdict && !sweep.verdict->best_knobs.empty()) {
    for (const db::TrialRecord& trial : trials) {
      if (db::TrialKnobKey(trial.knobs) == sweep.verdict->best_knobs) return trial;
    }
  }
  return search_best;
}

Result<std::optional<db::TrialRecord>> ChosenTrial(db::Store& store, const db::SweepRecord& sweep) {
  if (sweep.verdict && !sweep.verdict->best_knobs.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(std::vector<db::TrialRecord> trials, store.ListTrials(sweep.id));
    // The search's best is read only when the verdict names no stored trial.
    std::optional<db::TrialRecord> chosen = ChosenAmong(sweep, trials, std::nullopt);
    if (chosen) return chosen;
  }
  return store.BestTrial(sweep.id);
}

std::string VerdictText(db::Verdict verdict) {
  switch (verdict) {
    case db::Verdict::kBeatsDefault:
      return "beats default: the chosen config is better than the default beyond noise (its "
             "same-round pairs with the default, or their confidence intervals)";
    case db::Verdict::kWithinNoise:
      return "within noise: the chosen config does not beat the default beyond noise (its "
             "same-round pairs with the default, or their confidence intervals)";
    case db::Verdict::kDefaultIsBest:
      return "default is best: no config measured beats it";
    case db::Verdict::kNoValidTrial:
      return "no valid trial: nothing validated to compare with the default";
  }
  return std::string(db::VerdictName(verdict));
}

}  // namespace artune::tuner
