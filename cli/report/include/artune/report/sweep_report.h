// The HTML report of one stored sweep (`artune report --sweep ID`): what was
// searched and how, the winner against the transport's defaults and the sweep's
// verdict on it, a heatmap of the objective over eager_threshold x chunk_size with
// the best cell marked, and every trial in a table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"

namespace artune::report {

// The two knobs the heatmap spreads over: eager_threshold (rows) and chunk_size
// (columns) when the sweep varied them, else the first one or two knobs it varied
// (in name order); `column` is empty for a sweep over one knob (one column).
struct HeatmapAxes {
  std::string row;
  std::string column;
};
HeatmapAxes ChooseHeatmapAxes(const std::vector<db::TrialRecord>& trials);

// `trials` in the order stored (Store::ListTrials), `best` the search's best trial
// as Store::BestTrial gave it. The report is about the chosen config, the one
// `artune apply config --sweep` writes: the trial whose TrialKnobKey is the stored
// verdict's best_knobs (the final round's pick), else `best`. It is named "chosen"
// throughout, starred in the heatmap and highlighted in the tables; when `best` is
// another trial, the report names it "the search's best" and says the final round
// chose over it. A heatmap cell shows the best ok and validated trial at that point
// (a sweep over more knobs has several per cell: the tooltip names the one shown); a
// point with only invalid or failed trials is hatched, its tooltip says why. The
// default trial is the one whose TrialKnobKey equals sweep.default_knobs;
// sweep.verdict, when stored, is stated under the chosen config with it and the
// default measured again at the end of the sweep (best_remeasured,
// default_remeasured: a sentence with their objectives and CIs, and rows of the
// table). Every string from the records is escaped. Returns the whole document
// (html.h). Pure; thread-safe.
std::string SweepReportHtml(const db::SweepRecord& sweep,
                            const std::vector<db::TrialRecord>& trials,
                            const std::optional<db::TrialRecord>& best);

}  // namespace artune::report
