#include "artune/tuner/sweep_view.h"

#include <algorithm>
#include <utility>

#include "artune/db/record_json.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/sweep_choice.h"
#include "artune/tuner/trial_json.h"

namespace artune::tuner {
namespace {

using nlohmann::ordered_json;

// The distinct values a knob takes over the trials, in numeric order.
std::vector<std::string> AxisValues(const std::vector<db::TrialRecord>& trials,
                                    const std::string& knob_name) {
  const transport::Knob* knob = transport::FindKnob(knob_name);
  std::vector<std::pair<uint64_t, std::string>> values;
  for (const db::TrialRecord& trial : trials) {
    auto it = trial.knobs.find(knob_name);
    if (it == trial.knobs.end()) continue;
    uint64_t number = 0;
    if (knob != nullptr) {
      if (auto parsed = transport::ParseKnobValue(*knob, it->second); parsed.ok()) number = *parsed;
    }
    std::pair<uint64_t, std::string> entry{number, it->second};
    if (std::find(values.begin(), values.end(), entry) == values.end()) values.push_back(entry);
  }
  std::sort(values.begin(), values.end());
  std::vector<std::string> names;
  for (auto& [number, text] : values) names.push_back(std::move(text));
  return names;
}

ordered_json HeatmapJson(const SweepView& view) {
  if (!view.heatmap()) return nullptr;
  ordered_json cells = ordered_json::array();
  for (const std::string& eager : view.eagers) {
    ordered_json row = ordered_json::array();
    for (const std::string& chunk : view.chunks) {
      const db::TrialRecord* cell = HeatmapCell(view.trials, view.best, eager, chunk);
      row.push_back(cell != nullptr && cell->status == db::TrialStatus::kOk
                        ? ordered_json(cell->objective)
                        : ordered_json(nullptr));
    }
    cells.push_back(row);
  }
  return {{"rows", "eager_threshold"},    {"columns", "chunk_size"}, {"row_values", view.eagers},
          {"column_values", view.chunks}, {"held", view.held},       {"cells", cells}};
}

}  // namespace

Result<SweepView> ReadSweepView(db::Store& store, int64_t sweep_id) {
  SweepView view;
  ARTUNE_ASSIGN_OR_RETURN(view.sweep, store.GetSweep(sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(view.trials, store.ListTrials(view.sweep.id));
  ARTUNE_ASSIGN_OR_RETURN(view.best, ChosenTrial(store, view.sweep));
  ARTUNE_ASSIGN_OR_RETURN(view.search_best, store.BestTrial(view.sweep.id));
  for (const db::TrialRecord& trial : view.trials) {
    if (db::TrialKnobKey(trial.knobs) == view.sweep.default_knobs) view.default_trial = trial;
  }
  view.eagers = AxisValues(view.trials, "eager_threshold");
  view.chunks = AxisValues(view.trials, "chunk_size");
  if (view.best) {
    for (const auto& [name, value] : view.best->knobs) {
      if (name != "eager_threshold" && name != "chunk_size") view.held.emplace(name, value);
    }
  }
  return view;
}

// The trial at (eager, chunk) when every other swept knob is at the chosen config's
// value (or, with none chosen, any trial there).
const db::TrialRecord* HeatmapCell(const std::vector<db::TrialRecord>& trials,
                                   const std::optional<db::TrialRecord>& best,
                                   const std::string& eager, const std::string& chunk) {
  for (const db::TrialRecord& trial : trials) {
    if (trial.knobs.count("eager_threshold") == 0 || trial.knobs.count("chunk_size") == 0 ||
        trial.knobs.at("eager_threshold") != eager || trial.knobs.at("chunk_size") != chunk) {
      continue;
    }
    bool matches = true;
    if (best) {
      for (const auto& [name, value] : trial.knobs) {
        if (name == "eager_threshold" || name == "chunk_size") continue;
        auto it = best->knobs.find(name);
        if (it == best->knobs.end() || it->second != value) matches = false;
      }
    }
    if (matches) return &trial;
  }
  return nullptr;
}

ordered_json SweepRecordJson(const db::SweepRecord& sweep) {
  ordered_json j = {{"id", sweep.id}};
  for (const auto& [name, field] : db::kSweepTextFields) j[name] = sweep.*field;
  // CPU hogs beside its measurements (`artune sweep --background-load`); 0: none.
  j["background_load"] = sweep.background_load;
  j["verdict"] = sweep.verdict ? ordered_json(std::string(db::VerdictName(sweep.verdict->verdict)))
                               : ordered_json();
  return j;
}

ordered_json SweepViewJson(const SweepView& view, std::optional<int64_t> cluster_id) {
  ordered_json j;
  j["sweep"] = SweepRecordJson(view.sweep);
  // The cluster run this sweep measured a link of; null for a sweep of its own.
  j["cluster_id"] = cluster_id ? ordered_json(*cluster_id) : ordered_json();
  j["trials"] = ordered_json::array();
  for (const db::TrialRecord& trial : view.trials) j["trials"].push_back(TrialJson(trial));
  j["best"] = PickJson(view.best);
  j["default"] = PickJson(view.default_trial);
  AddVerdictJson(j, view.sweep.verdict);
  j["heatmap"] = HeatmapJson(view);
  return j;
}

}  // namespace artune::tuner
