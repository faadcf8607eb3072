#include "artune/cluster/cluster_choice.h"

#include <vector>

#include "artune/base/number_text.h"

namespace artune::cli {

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

namespace {

std::string Joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : ", ") + word;
  return text;
}

}  // namespace

Result<ClusterChoice> ReadClusterChoice(db::Store& store, int64_t cluster_id,
                                        tuner::ClusterGoal goal) {
  ClusterChoice choice;
  ARTUNE_ASSIGN_OR_RETURN(choice.data, tuner::ReadClusterData(store, cluster_id, goal));
  choice.analysis = tuner::AnalyzeCluster(choice.data.input);
  const std::string name = "cluster " + std::to_string(cluster_id);
  const std::string goal_name(tuner::ClusterGoalName(goal));
  const auto knobs_of = [&](const std::string& key) -> Result<std::map<std::string, std::string>> {
    auto knobs = db::ParseTrialKnobKey(key);
    if (!knobs.ok()) {
      return Status::Corruption(name + "'s winner '" + key + "' is not knob text (" +
                                knobs.status().message() + ")");
    }
    return *knobs;
  };
  const auto& winner = choice.analysis.winner.winner;
  const auto describe = [&](const tuner::ConfigScore& score, size_t links) {
    return "worst link " + FormatNumber(score.worst, 2) + " " + choice.data.objective + ", " +
           std::to_string(links) + (links == 1 ? " link" : " links");
  };
  if (choice.analysis.grouping.winners_differ) {
    for (const tuner::HostGroup& group : choice.analysis.grouping.groups) {
      ClusterChoice::Part part;
      part.device_class = group.device_class.empty() ? "unknown" : group.device_class;
      part.hosts = group.hosts;
      const std::string hosts = "hosts " + Joined(group.hosts) + " (" + part.device_class + ")";
      if (group.winner.winner) {
        ARTUNE_ASSIGN_OR_RETURN(part.knobs, knobs_of(group.winner.winner->key));
        part.origin = name + " " + hosts + ": their links' winner by " + goal_name + " (" +
                      describe(*group.winner.winner, group.links.size()) + ")";
      } else if (winner) {
        ARTUNE_ASSIGN_OR_RETURN(part.knobs, knobs_of(winner->key));
        part.origin = name + " " + hosts + ": the cluster's winner by " + goal_name +
                      " (no link within the group was measured)";
      } else {
        return Status::NotFound(name + ": " + hosts + " have no winner (" + group.winner.reason +
                                "); see `artune results --cluster " + std::to_string(cluster_id) +
                                "`");
      }
      choice.parts.push_back(std::move(part));
    }
    return choice;
  }
  if (!winner) {
    return Status::NotFound(name + " has no winner to apply: " + choice.analysis.winner.reason +
                            "; see `artune results --cluster " + std::to_string(cluster_id) + "`");
  }
  ClusterChoice::Part part;
  part.hosts = choice.analysis.matrix.hosts;
  ARTUNE_ASSIGN_OR_RETURN(part.knobs, knobs_of(winner->key));
  part.origin = name + " winner by " + goal_name + " for every host (" +
                describe(*winner, choice.analysis.usable_links) + ", " + choice.data.cluster.pairs +
                " pairs, " + choice.data.cluster.created_at + ")";
  choice.parts.push_back(std::move(part));
  return choice;
}

}  // namespace artune::cli
