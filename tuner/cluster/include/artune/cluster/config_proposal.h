// What `artune apply config` lays over the config in force, and where it came
// from: a stored sweep's chosen config (artune/tuner/sweep_choice.h), a cluster
// run's (cluster_choice.h: one per host group where the groups chose
// differently), a stored prediction's best (`artune predict`), and --set
// NAME=VALUE. Here, in the cluster room, because it is the one room that sees both
// sweeps and cluster runs. The CLI parses the flags into a ProposalRequest, calls
// ProposeConfig, and writes, prints or pushes what it returns.
//
// Threading: blocking calls on the caller's thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "artune/cluster/cluster_choice.h"
#include "artune/status.h"
#include "artune/tuner/config_emit.h"
#include "artune/tuner/sweep_choice.h"

namespace artune::tuner {

struct ProposalRequest {
  std::optional<int64_t> sweep_id;
  std::optional<int64_t> cluster_id;
  std::optional<int64_t> prediction_id;  // `artune predict`'s best
  std::string goal = "worst-link";       // with cluster_id; ParseClusterGoal text
  std::vector<std::string> settings;     // NAME=VALUE, in order, laid over the rest
};

// The knob values to apply and lines saying where they came from.
struct ConfigProposal {
  std::vector<KnobSetting> settings;
  std::vector<std::string> origin_lines;  // for the TOML/env header and the report
  std::optional<int64_t> sweep_id;
  std::optional<double> objective;
  std::string objective_name;
  // The sweep's stored verdict ("" when the sweep has none or no sweep is read),
  // and a warning when it says the best does not beat the defaults beyond noise.
  std::string verdict;
  std::string verdict_warning;
  // Set when the settings take polling = busy from a sweep measured on an idle
  // host (no --background-load): busy polling takes a core per side and collapses
  // when the host's cores are busy (issue 26).
  std::string idle_busy_polling_warning;
  // The sweep's winner (sweep_choice.h): its knobs as text, how it was chosen, and
  // its stored trial's id when it has one.
  std::string winner;
  std::string winner_how;
  bool winner_chosen_by_verdict = false;
  std::optional<int64_t> winner_trial_id;
  // A cluster run read (--cluster): its id, and when its host groups chose
  // different winners, one part per group (then `settings` holds only --set).
  std::optional<int64_t> cluster_id;
  std::optional<int64_t> prediction_id;  // --prediction
  std::vector<ClusterChoice::Part> cluster_groups;
  std::string cluster_groups_reason;
};

// Reads what the request names: the cluster, the prediction, or the sweep (the
// named one, or by default the newest when neither a cluster, a prediction nor a
// setting is given), then the settings. Errors: the store's and `open_store`'s
// (kNotFound "no sweep to apply" when there is none), ReadSweepChoice's,
// ReadClusterChoice's, kInvalidArgument for a setting that is not NAME=VALUE.
Result<ConfigProposal> ProposeConfig(const ProposalRequest& request, const StoreOpener& open_store);

// The JSON of `apply config` (and `--live`) saying where the knobs came from.
// ProposalWinnerJson: null when no sweep or cluster was read; else {knobs,
// chosen_by: "final_remeasurement" | "best_trial" | "cluster", how, trial_id (null
// when no stored trial has the knobs)}.
nlohmann::ordered_json ProposalWinnerJson(const ConfigProposal& proposal);
// Adds sweep_id, cluster_id, prediction_id, objective, objective_value, verdict and
// winner (each null when not read).
void AddProposalJson(nlohmann::ordered_json& out, const ConfigProposal& proposal);
// Adds warnings (`warnings`, then the proposal's verdict and idle-busy-polling
// warnings) and busy_polling_measured_idle: true when the config takes polling =
// busy from a sweep measured without --background-load.
void AddProposalWarningsJson(nlohmann::ordered_json& out, const ConfigProposal& proposal,
                             const std::vector<std::string>& warnings);

}  // namespace artune::tuner
