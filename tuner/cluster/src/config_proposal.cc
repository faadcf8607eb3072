#include "artune/cluster/config_proposal.h"

#include <utility>

#include "artune/cluster/cluster_model.h"

namespace artune::tuner {
namespace {

using nlohmann::ordered_json;

// A model run's predicted best for the cluster (cluster_model.h): the config with
// the least predicted total over its links.
Status CollectModelClusterSettings(db::Store& store, int64_t cluster_id, ConfigProposal& proposal) {
  ARTUNE_ASSIGN_OR_RETURN(const ClusterModelData data, ReadClusterModels(store, cluster_id));
  const std::string name = "cluster " + std::to_string(cluster_id);
  if (data.prediction.ranked.empty()) {
    return Status::NotFound(name +
                            " has no link with a model to predict from (`artune results "
                            "--cluster " +
                            std::to_string(cluster_id) + "` shows why)");
  }
  const ClusterConfigTotal& best = data.prediction.ranked.front();
  const std::string origin = name + " predicted best";
  for (const auto& [knob, value] : best.knobs) proposal.settings.push_back({knob, value, origin});
  proposal.cluster_id = cluster_id;
  proposal.objective = best.seconds;
  proposal.objective_name = "predicted-workload-time";
  proposal.winner = KnobKeyText(best.key);
  proposal.winner_how = "the least predicted total over " +
                        std::to_string(data.prediction.usable_links) + " links' models";
  proposal.origin_lines.push_back(origin + ": " + proposal.winner + ", predicted " +
                                  std::to_string(best.seconds) + " s for one pass on each link (" +
                                  data.workload + ", " + data.cluster.created_at + ")");
  return Status::Ok();
}

// The cluster's winner as settings, or its groups' winners (cluster_choice.h).
Status CollectClusterSettings(const ProposalRequest& request, const StoreOpener& open_store,
                              ConfigProposal& proposal) {
  ARTUNE_ASSIGN_OR_RETURN(auto store, open_store());
  ARTUNE_ASSIGN_OR_RETURN(const db::ClusterRecord cluster, store->GetCluster(*request.cluster_id));
  if (cluster.measurement == kModelMeasurement) {
    return CollectModelClusterSettings(*store, cluster.id, proposal);
  }
  ARTUNE_ASSIGN_OR_RETURN(ClusterChoice choice, ReadClusterChoice(*store, *request.cluster_id,
                                                                  *ParseClusterGoal(request.goal)));
  proposal.cluster_id = request.cluster_id;
  proposal.objective_name = choice.data.objective;
  if (choice.parts.size() > 1) {
    proposal.cluster_groups = std::move(choice.parts);
    proposal.cluster_groups_reason = choice.analysis.grouping.reason;
    return Status::Ok();
  }
  const ClusterChoice::Part& part = choice.parts.front();
  const std::string origin = "cluster " + std::to_string(*request.cluster_id) + " winner";
  for (const auto& [name, value] : part.knobs) proposal.settings.push_back({name, value, origin});
  proposal.origin_lines.push_back(part.origin);
  if (choice.analysis.winner.winner) {
    proposal.objective = choice.analysis.winner.winner->worst;
    proposal.winner = KnobKeyText(choice.analysis.winner.winner->key);
    proposal.winner_how = choice.analysis.winner.reason;
  }
  return Status::Ok();
}

// The warning of ConfigProposal::idle_busy_polling_warning, or "": when the last
// setting of polling (the one applied) is busy and comes from `sweep` (not --set),
// and the sweep ran without a background load.
std::string IdleBusyPollingWarning(const std::vector<KnobSetting>& settings,
                                   const db::SweepRecord& sweep) {
  const KnobSetting* polling = nullptr;
  for (const KnobSetting& setting : settings) {
    if (setting.name == "polling") polling = &setting;
  }
  if (polling == nullptr || polling->value != "busy" || sweep.background_load > 0 ||
      polling->origin.rfind("sweep ", 0) != 0) {
    return "";
  }
  return "polling = busy was chosen by sweep " + std::to_string(sweep.id) +
         ", measured without background load: busy polling takes a core per side and "
         "collapses when the host's cores are busy (a training host's are); measure again "
         "under load (`artune sweep --background-load all`, or `artune apply compare --sweep " +
         std::to_string(sweep.id) +
         " --background-load all`), or set polling = adaptive (--set polling=adaptive)";
}

// A stored prediction's best (`artune predict`): its swept knobs, as a sweep's
// winner hands on its swept knobs.
Status CollectPredictionSettings(const ProposalRequest& request, const StoreOpener& open_store,
                                 ConfigProposal& proposal) {
  ARTUNE_ASSIGN_OR_RETURN(auto store, open_store());
  ARTUNE_ASSIGN_OR_RETURN(const db::PredictionRecord prediction,
                          store->GetPrediction(*request.prediction_id));
  ARTUNE_ASSIGN_OR_RETURN(auto knobs, db::ParseTrialKnobKey(prediction.best_knobs));
  const std::string origin = "prediction " + std::to_string(prediction.id) + " best";
  for (const auto& [name, value] : knobs) proposal.settings.push_back({name, value, origin});
  proposal.winner = KnobKeyText(prediction.best_knobs);
  proposal.winner_how = "predicted by link model " + std::to_string(prediction.model_id);
  proposal.prediction_id = prediction.id;
  proposal.objective = prediction.best_s;
  proposal.objective_name = "predicted-workload-time";
  proposal.origin_lines.push_back(
      origin + ": " + proposal.winner + ", predicted " + std::to_string(prediction.best_s) +
      " s per pass against the default's " + std::to_string(prediction.default_s) + " (" +
      prediction.workload + ", link model " + std::to_string(prediction.model_id) + ", " +
      prediction.created_at + ")");
  return Status::Ok();
}

// The sweep's chosen config as settings: the named sweep, else the newest.
// Returns the sweep read.
Result<db::SweepRecord> CollectSweepSettings(const ProposalRequest& request,
                                             const StoreOpener& open_store,
                                             ConfigProposal& proposal) {
  auto opened = open_store();
  if (!opened.ok()) {
    return opened.status().WithContext(
        "no sweep to apply (run `artune sweep` first, or give --set NAME=VALUE)");
  }
  db::Store& store = **opened;
  int64_t sweep_id = 0;
  if (request.sweep_id.has_value()) {
    sweep_id = *request.sweep_id;
  } else {
    ARTUNE_ASSIGN_OR_RETURN(std::vector<db::SweepRecord> sweeps, store.ListSweeps(1));
    if (sweeps.empty()) {
      return Status::NotFound(
          "the store has no sweep to apply; run `artune sweep` first, or give --set "
          "NAME=VALUE");
    }
    sweep_id = sweeps.front().id;
  }
  ARTUNE_ASSIGN_OR_RETURN(const SweepChoice winner, ReadSweepChoice(store, sweep_id));
  const db::SweepRecord& sweep = winner.sweep;
  const std::string origin =
      "sweep " + std::to_string(sweep_id) + (winner.chosen_by_verdict ? " winner" : " best trial");
  for (const auto& [name, value] : winner.knobs) {
    proposal.settings.push_back({name, value, origin});
  }
  proposal.winner = winner.KnobText();
  proposal.winner_how = winner.How();
  proposal.winner_chosen_by_verdict = winner.chosen_by_verdict;
  if (winner.trial) proposal.winner_trial_id = winner.trial->id;
  if (sweep.verdict) {
    proposal.verdict = std::string(db::VerdictName(sweep.verdict->verdict));
    // Applied anyway (the user may want it, e.g. for another reason than speed);
    // only said, so nobody mistakes noise for a win.
    if (sweep.verdict->verdict == db::Verdict::kWithinNoise ||
        sweep.verdict->verdict == db::Verdict::kDefaultIsBest) {
      proposal.verdict_warning = "sweep " + std::to_string(sweep_id) + "'s winner (" +
                                 winner.KnobText() +
                                 ") does not beat the default config beyond noise: " +
                                 VerdictText(sweep.verdict->verdict) + "; applying it anyway";
    }
  }
  proposal.sweep_id = sweep_id;
  if (winner.trial) proposal.objective = winner.trial->objective;
  proposal.objective_name = sweep.objective;
  std::string measured = sweep.objective;
  if (winner.trial) {
    measured += " " + std::to_string(winner.trial->objective) + " in trial #" +
                std::to_string(winner.trial->id);
  }
  proposal.origin_lines.push_back("sweep " + std::to_string(sweep_id) +
                                  " winner: " + winner.KnobText() + ", " + winner.How() + " (" +
                                  measured + ", " + sweep.workload + ", " + sweep.fabric + ", " +
                                  sweep.strategy + ", " + sweep.created_at + ")");
  return sweep;
}

}  // namespace

Result<ConfigProposal> ProposeConfig(const ProposalRequest& request,
                                     const StoreOpener& open_store) {
  ConfigProposal proposal;
  std::optional<db::SweepRecord> read_sweep;  // the sweep whose winner is applied
  if (request.cluster_id)
    ARTUNE_RETURN_IF_ERROR(CollectClusterSettings(request, open_store, proposal));
  if (request.prediction_id) {
    ARTUNE_RETURN_IF_ERROR(CollectPredictionSettings(request, open_store, proposal));
  }
  // A sweep is read when named, or (the default) when neither a cluster, a
  // prediction nor --set is given.
  if (!request.cluster_id && !request.prediction_id &&
      (request.sweep_id.has_value() || request.settings.empty())) {
    ARTUNE_ASSIGN_OR_RETURN(read_sweep, CollectSweepSettings(request, open_store, proposal));
  }
  for (const std::string& text : request.settings) {
    ARTUNE_ASSIGN_OR_RETURN(KnobSetting setting, ParseKnobSetting(text));
    proposal.settings.push_back(std::move(setting));
  }
  if (!request.settings.empty()) {
    std::string line = "set:";
    for (const std::string& text : request.settings) line += " " + text;
    proposal.origin_lines.push_back(line);
  }
  if (read_sweep) {
    proposal.idle_busy_polling_warning = IdleBusyPollingWarning(proposal.settings, *read_sweep);
  }
  return proposal;
}

ordered_json ProposalWinnerJson(const ConfigProposal& proposal) {
  if (proposal.cluster_id && !proposal.winner.empty()) {
    return {{"knobs", proposal.winner},
            {"chosen_by", "cluster"},
            {"how", proposal.winner_how},
            {"trial_id", nullptr}};
  }
  if (!proposal.sweep_id) return nullptr;
  return {{"knobs", proposal.winner},
          {"chosen_by", proposal.winner_chosen_by_verdict ? "final_remeasurement" : "best_trial"},
          {"how", proposal.winner_how},
          {"trial_id",
           proposal.winner_trial_id ? ordered_json(*proposal.winner_trial_id) : ordered_json()}};
}

void AddProposalJson(ordered_json& out, const ConfigProposal& proposal) {
  out["sweep_id"] = proposal.sweep_id ? ordered_json(*proposal.sweep_id) : ordered_json();
  out["cluster_id"] = proposal.cluster_id ? ordered_json(*proposal.cluster_id) : ordered_json();
  out["prediction_id"] =
      proposal.prediction_id ? ordered_json(*proposal.prediction_id) : ordered_json();
  out["objective"] =
      proposal.objective_name.empty() ? ordered_json() : ordered_json(proposal.objective_name);
  out["objective_value"] = proposal.objective ? ordered_json(*proposal.objective) : ordered_json();
  out["verdict"] = proposal.verdict.empty() ? ordered_json() : ordered_json(proposal.verdict);
  out["winner"] = ProposalWinnerJson(proposal);
}

void AddProposalWarningsJson(ordered_json& out, const ConfigProposal& proposal,
                             const std::vector<std::string>& warnings) {
  out["warnings"] = warnings;
  if (!proposal.verdict_warning.empty()) out["warnings"].push_back(proposal.verdict_warning);
  // True when the config takes polling = busy from a sweep measured without
  // --background-load (the warning says why that matters).
  out["busy_polling_measured_idle"] = !proposal.idle_busy_polling_warning.empty();
  if (!proposal.idle_busy_polling_warning.empty()) {
    out["warnings"].push_back(proposal.idle_busy_polling_warning);
  }
}

}  // namespace artune::tuner
