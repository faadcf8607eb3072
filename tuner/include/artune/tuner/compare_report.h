// What `artune apply compare` reports of a paired A/B (compare_plan.h plans and
// measures it): its --json object, the sentence of its verdict and whether both
// sides' replies validated. The CLI prints the human table itself.
//
// Threading: pure functions over plain values.
#pragma once

#include <nlohmann/json.hpp>

#include "artune/status.h"
#include "artune/tuner/compare_plan.h"
#include "artune/tuner/paired_compare.h"
#include "artune/tuner/stats.h"

namespace artune::tuner {

// `apply compare --json`: the workload and how it was replayed, both sides (source,
// fabric, config, what each measured), the tuned side's sweep winner (null without
// --sweep), the speedups and the paired verdict.
nlohmann::ordered_json CompareJson(const CompareRequest& request, const ComparePlan& plan,
                                   const PairedCompareResult& compared);

// The verdict in words: "the tuned config is faster beyond noise", ...
const char* PairedOutcomeText(PairedOutcome outcome);

// kCorruption naming the first side's validation error when a replayed call of
// either side failed validation; Ok otherwise.
Status CheckCompareValidated(const PairedCompareResult& compared);

}  // namespace artune::tuner
