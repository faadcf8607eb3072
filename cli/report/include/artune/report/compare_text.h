// `artune apply compare` as text: the measured workload and both sides' sources,
// the knobs that differ side by side with what each side measured, and the paired
// verdict. Prints to the stream given; no errors.
#pragma once

#include <ostream>

#include "artune/tuner/compare_plan.h"
#include "artune/tuner/paired_compare.h"

namespace artune::report {

void PrintCompareText(const tuner::CompareRequest& request, const tuner::ComparePlan& plan,
                      const tuner::PairedCompareResult& compared, std::ostream& out);

}  // namespace artune::report
