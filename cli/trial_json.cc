#include "trial_json.h"

namespace artune::cli {

using nlohmann::ordered_json;

ordered_json KnobsJson(const std::map<std::string, std::string>& knobs) {
  ordered_json j = ordered_json::object();
  for (const auto& [name, value] : knobs) j[name] = value;
  return j;
}

ordered_json TrialJson(const db::TrialRecord& trial) {
  ordered_json metrics = ordered_json::object();
  for (const auto& [name, value] : trial.metrics) metrics[name] = value;
  return {{"id", trial.id},
          {"knobs", KnobsJson(trial.knobs)},
          {"status", trial.status},
          {"objective", trial.objective},
          {"ci_low", trial.ci_low},
          {"ci_high", trial.ci_high},
          {"samples", trial.samples},
          {"remeasured", trial.remeasured},
          {"validated", trial.validated},
          {"error", trial.error},
          {"duration_s", trial.duration_s},
          {"metrics", metrics}};
}

}  // namespace artune::cli
