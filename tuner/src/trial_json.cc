#include "artune/tuner/trial_json.h"

#include "artune/db/record_json.h"

namespace artune::tuner {

using nlohmann::ordered_json;

ordered_json KnobsJson(const std::map<std::string, std::string>& knobs) {
  ordered_json j = ordered_json::object();
  for (const auto& [name, value] : knobs) j[name] = value;
  return j;
}

ordered_json TrialJson(const db::TrialRecord& trial) {
  ordered_json j = {{"id", trial.id}};
  db::AddTrialJson(j, trial);
  return j;
}

ordered_json PickJson(const std::optional<db::TrialRecord>& trial) {
  if (!trial) return nullptr;
  // knobs then objective first: shell tests read these objects with sed.
  return {{"knobs", KnobsJson(trial->knobs)},
          {"objective", trial->objective},
          {"ci_low", trial->ci_low},
          {"ci_high", trial->ci_high},
          {"validated", trial->validated},
          {"status", std::string(db::TrialStatusName(trial->status))},
          {"samples", trial->samples},
          {"id", trial->id != 0 ? ordered_json(trial->id) : ordered_json()}};
}

void AddVerdictJson(ordered_json& out, const std::optional<db::SweepVerdict>& verdict) {
  auto remeasured_json = [](const std::optional<db::TrialRecord>& again) {
    ordered_json remeasured = PickJson(again);
    if (again) remeasured["measured_at"] = again->started_at;
    return remeasured;
  };
  out["best_remeasured"] = remeasured_json(verdict ? verdict->best_remeasured : std::nullopt);
  out["default_remeasured"] = remeasured_json(verdict ? verdict->default_remeasured : std::nullopt);
  out["final_rounds"] = verdict ? verdict->final_rounds : 0;
  ordered_json finalists = ordered_json::array();
  if (verdict) {
    for (const db::FinalistRecord& finalist : verdict->finalists) {
      ordered_json one = PickJson(finalist.pooled);
      one["rounds_won"] = finalist.rounds_won;
      one["error"] = finalist.pooled.error;
      finalists.push_back(std::move(one));
    }
  }
  out["finalists"] = std::move(finalists);
  out["best_beats_default"] = verdict && verdict->best_beats_default();
  out["verdict"] =
      verdict ? ordered_json(std::string(db::VerdictName(verdict->verdict))) : ordered_json();
}

nlohmann::ordered_json PairedEstimateJson(const MedianEstimate& estimate) {
  return {{"median", estimate.median},
          {"ci_low", estimate.low},
          {"ci_high", estimate.high},
          {"confidence", estimate.achieved_confidence},
          {"pairs", estimate.count}};
}

ordered_json LayoutJson(const Workload& workload) {
  if (workload.layout.empty()) return nullptr;
  ordered_json out = ordered_json::object();
  for (const auto& [label, layout] : workload.layout) {
    out[label] = {{"mean_slices", layout.mean_slices()},
                  {"max_slices", layout.max_slices},
                  {"from_iovecs", layout.from_iovecs},
                  {"data_iovecs", layout.data_iovecs},
                  {"framing_iovecs", layout.framing_iovecs}};
  }
  return out;
}

void AddSweepOutcomeJson(nlohmann::ordered_json& out, const SweepOutcome& outcome,
                         const Workload& workload, uint32_t inflight, std::string_view unit) {
  out["objective"] = outcome.sweep.objective;
  out["goal"] = outcome.sweep.goal;
  out["unit"] = unit;
  out["fabric"] = outcome.sweep.fabric;
  out["strategy"] = outcome.sweep.strategy;
  out["workload"] = outcome.sweep.workload;
  out["layout"] = LayoutJson(workload);
  out["peer"] = outcome.sweep.peer;
  out["search_space"] = outcome.sweep.search_space;
  out["inflight"] = inflight;
  out["background_load"] = outcome.sweep.background_load;
  out["measured"] = outcome.measured;
  out["resumed"] = outcome.resumed;
  out["trials"] = ordered_json::array();
  for (const db::TrialRecord& trial : outcome.trials) out["trials"].push_back(TrialJson(trial));
  out["best"] = PickJson(outcome.best);
  out["search_best"] = PickJson(outcome.search_best);
  out["default"] = PickJson(outcome.default_trial);
  AddVerdictJson(out, outcome.sweep.verdict);
  // The top finalist's same-round pairs with the default (speedup > 1: better);
  // null without a final round or with fewer than 6 pairs.
  if (outcome.winner_pairs) {
    out["final_pairs"] = PairedEstimateJson(outcome.winner_pairs->estimate);
    out["final_pairs"]["outcome"] = PairedOutcomeName(outcome.winner_pairs->outcome);
  } else {
    out["final_pairs"] = nullptr;
  }
  if (outcome.warmup) {
    out["warmup"] = {{"passes", outcome.warmup->passes},
                     {"stable", outcome.warmup->stable},
                     {"seconds", outcome.warmup->seconds}};
  } else {
    out["warmup"] = nullptr;
  }
}

}  // namespace artune::tuner
