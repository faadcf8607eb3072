// One stored sweep as `artune results --sweep` shows it: its records, the chosen
// config against the search's best and the default, and the eager_threshold x
// chunk_size heatmap derived from its trials, and its JSON (SweepViewJson). The
// CLI reads it and prints it; which cluster run the sweep belongs to is the
// cluster room's (FindClusterOfSweep).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"

namespace artune::tuner {

struct SweepView {
  db::SweepRecord sweep;
  std::vector<db::TrialRecord> trials;
  // The chosen config (ChosenTrial: the final round's pick, the one `apply config
  // --sweep` writes) and the search's best trial (Store::BestTrial), which differ
  // when the final round chose another finalist. JSON calls the chosen one "best".
  std::optional<db::TrialRecord> best;
  std::optional<db::TrialRecord> search_best;
  std::optional<db::TrialRecord> default_trial;  // the trial of the default knobs
  std::vector<std::string> eagers;               // heatmap rows
  std::vector<std::string> chunks;               // heatmap columns
  // With more axes than the two, each cell is the point at the chosen values of
  // the others (HeatmapCell): say which, or a 3-axis map reads as the whole sweep.
  std::map<std::string, std::string> held;

  bool heatmap() const { return !eagers.empty() && !chunks.empty(); }
};

// Reads the sweep, its trials and picks. Errors: the store's (kNotFound: no such
// sweep).
Result<SweepView> ReadSweepView(db::Store& store, int64_t sweep_id);

// The trial at (eager, chunk) when every other swept knob is at the chosen config's
// value (or, with none chosen, any trial there).
const db::TrialRecord* HeatmapCell(const std::vector<db::TrialRecord>& trials,
                                   const std::optional<db::TrialRecord>& best,
                                   const std::string& eager, const std::string& chunk);

// A stored sweep in `results --sweeps --json` and under "sweep" below: id, the
// text fields (db::kSweepTextFields), background_load and verdict (its name, or
// null without a stored verdict).
nlohmann::ordered_json SweepRecordJson(const db::SweepRecord& sweep);

// `results --sweep ID --json`: sweep (SweepRecordJson), cluster_id (the cluster run
// the sweep measured a link of; null for a sweep of its own), trials (TrialJson),
// best (the chosen config) and default (PickJson), the verdict (AddVerdictJson) and
// heatmap ({rows, columns, row_values, column_values, held, cells}; null without
// both axes).
nlohmann::ordered_json SweepViewJson(const SweepView& view, std::optional<int64_t> cluster_id);

}  // namespace artune::tuner
