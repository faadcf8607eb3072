// The sweep view's model: a sweep's trials turned into progress, an ETA and a
// heatmap of eager_threshold x chunk_size coloured by the objective. Pure
// functions over plain records (the store reader, sweep_source.h, fills them), so
// the arithmetic is unit-tested without a database.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"

namespace artune::dashboard {

// One stored trial, as the view needs it.
struct SweepTrial {
  std::map<std::string, std::string> knobs;   // the swept knobs, as knob text ("4KiB")
  std::map<std::string, std::string> config;  // the full effective config (fallback axis values)
  db::TrialStatus status = db::TrialStatus::kFailed;
  bool validated = false;
  double objective = 0;
  double ci_low = 0, ci_high = 0;
  double duration_s = 0;
  std::string error;
};

struct SweepInput {
  int64_t id = 0;
  std::string created_at;
  std::string finished_at;  // "" while running (or killed)
  std::string objective;    // "latency-p50", "bandwidth", ...
  std::string goal;         // "min" | "max"
  std::string strategy;
  std::string workload;
  std::string peer;
  std::string fabric;
  std::optional<uint64_t> planned_trials;  // grid sweeps: the grid's size
  // The planned values of each swept knob (knob text), so unmeasured cells show.
  std::map<std::string, std::vector<std::string>> planned_axes;
  std::vector<SweepTrial> trials;  // in the order they were stored
  // The stored verdict (nullopt when none is stored), the default measured again at the
  // end of the sweep that it rests on, and the config the verdict judged measured
  // again just before it (absent when the sweep did not, e.g. the best is the
  // default).
  std::optional<db::Verdict> verdict;
  std::optional<SweepTrial> default_remeasured;
  std::optional<SweepTrial> best_remeasured;
  // The verdict's best_knobs (db::TrialKnobKey): the config the final round chose,
  // the one `artune apply config --sweep` writes; "" when no verdict is stored.
  std::string chosen_knobs;
};

inline constexpr int kHeatLevels = 5;  // 0 worst .. 4 best

struct HeatCell {
  bool measured = false;  // some trial landed here
  bool usable = false;    // some trial here is ok and validated
  double objective = 0;   // the best usable objective of the cell
  int level = 0;          // 0..kHeatLevels-1 among usable cells (higher: better)
  bool chosen = false;    // the chosen config's cell (SweepSummary::chosen), starred
};

struct SweepSummary {
  int64_t id = 0;
  std::string objective, goal, strategy, workload, peer, fabric, created_at;
  bool finished = false;
  uint64_t done = 0;  // trials stored
  uint64_t ok = 0;    // of which ok and validated
  std::optional<uint64_t> planned;
  std::optional<double> eta_s;  // while running with a known plan: remaining x mean trial time
  double trial_seconds = 0;     // sum of trial durations
  // Heatmap axes sorted by value, and cells[eager index][chunk index].
  std::vector<std::string> eager_values;
  std::vector<std::string> chunk_values;
  std::vector<std::vector<HeatCell>> cells;
  // The search's best trial so far (ok, validated, best objective).
  std::optional<SweepTrial> best;
  // The chosen config, as `artune apply config --sweep` takes it: once finished, the
  // trial the stored verdict chose (its final round may pick another finalist than
  // `best`); before, or without a verdict naming a trial, `best`.
  std::optional<SweepTrial> chosen;
  std::optional<SweepTrial> latest;  // the most recently stored trial
  // Only once the sweep is finished: a resumed sweep that is running again still
  // has its previous verdict stored, which the new trials may overturn.
  std::optional<db::Verdict> verdict;  // nullopt when not finished or none is stored
  std::optional<SweepTrial> default_remeasured;
  std::optional<SweepTrial> best_remeasured;
};

SweepSummary SummarizeSweep(const SweepInput& input);

// Sorts knob texts by the byte value they name ("256B" < "4KiB" < "1MiB"); texts
// that do not parse sort after, by text.
std::vector<std::string> SortKnobValues(const std::string& knob_name,
                                        std::vector<std::string> values);

}  // namespace artune::dashboard
