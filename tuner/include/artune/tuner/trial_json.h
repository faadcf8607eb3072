// The JSON shapes of a stored sweep's trials, picks and verdict, shared by
// `artune sweep --json` and `artune results --sweep ID --json` so scripts read one
// shape from both.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "artune/db/store.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/sweep.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

// {knob name: value} in the store's (sorted) order.
nlohmann::ordered_json KnobsJson(const std::map<std::string, std::string>& knobs);

// id, knobs, status, objective, ci_low, ci_high, samples, remeasured, validated,
// error, duration_s, metrics.
nlohmann::ordered_json TrialJson(const db::TrialRecord& trial);

// The short form of a trial singled out (best, default, the default re-measured):
// knobs, objective, ci_low, ci_high, validated, status, samples, id (null for a
// measurement that is not a stored trial); null when `trial` is absent.
nlohmann::ordered_json PickJson(const std::optional<db::TrialRecord>& trial);

// Adds the sweep's stored verdict to `out`:
//   "best_remeasured":    PickJson of the winner's pooled final-round measurement
//                         (before schema v6: the best measured again once), plus
//                         "measured_at" (null when not),
//   "default_remeasured": PickJson of the default's, plus "measured_at" (null when
//                         not re-measured),
//   "final_rounds":       interleaved rounds of the final round (0: none),
//   "finalists":          [PickJson of each finalist's pooled measurement, plus
//                         "rounds_won" and "error"], the winner first,
//   "best_beats_default": bool (false without a verdict),
//   "verdict": "beats_default" | "within_noise" | "default_is_best" |
//              "no_valid_trial", or null for a sweep with no stored verdict
//              (unfinished, or run by a build before schema v4).
void AddVerdictJson(nlohmann::ordered_json& out, const std::optional<db::SweepVerdict>& verdict);

// The buffer layout a capture replay sends (workload.h): {method label: {mean_slices,
// max_slices, from_iovecs, data_iovecs, framing_iovecs}}; null for a workload with
// no layout (schemes). Shared by `sweep --json` and `apply compare --json`.
nlohmann::ordered_json LayoutJson(const Workload& workload);

// The paired speedups' median and its interval: {median, ci_low, ci_high,
// confidence, pairs} (`apply compare`'s paired_speedup, `sweep`'s final_pairs).
nlohmann::ordered_json PairedEstimateJson(const MedianEstimate& estimate);

// `artune sweep --json` past the fields its front end sets from the store
// (sweep_id, stored, not_stored): objective, goal, unit, fabric, strategy,
// workload, layout (LayoutJson of `workload`), peer, search_space, inflight,
// background_load, measured, resumed, trials, best, search_best, default, the
// verdict (AddVerdictJson), final_pairs (the top finalist's same-round pairs with
// the default, with their outcome; null without) and warmup (passes, stable,
// seconds; null without).
void AddSweepOutcomeJson(nlohmann::ordered_json& out, const SweepOutcome& outcome,
                         const Workload& workload, uint32_t inflight, std::string_view unit);

}  // namespace artune::tuner
