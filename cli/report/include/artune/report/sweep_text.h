// A stored sweep as text, for `artune results`: the view of one sweep
// (tuner::SweepView: header, trials, the chosen config, the verdict, the heatmap)
// and the table of stored sweeps. Prints to the stream given; no errors.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

#include "artune/db/store.h"
#include "artune/tuner/sweep_view.h"

namespace artune::report {

// `results --sweep ID`: what was swept, how and under which load (and the cluster
// run, cluster_id, that it measured a link of); every trial with the chosen one, the
// search's best and the default noted; the chosen config, the search's best when
// another, the default; the default measured again and the verdict; the text heatmap
// eager_threshold x chunk_size when the view has both axes.
void PrintSweepText(const tuner::SweepView& view, std::optional<int64_t> cluster_id,
                    std::ostream& out);

// `results --sweeps`: one row per sweep, as given (the caller says when there is none).
void PrintSweepList(const std::vector<db::SweepRecord>& sweeps, std::ostream& out);

}  // namespace artune::report
