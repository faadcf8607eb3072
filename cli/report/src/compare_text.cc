// The text of `artune apply compare` (compare_text.h).
#include "artune/report/compare_text.h"

#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "artune/report/text_table.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/compare_report.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/workload.h"

namespace artune::report {
namespace {

std::string Fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// The header: the workload, the inflight, the load, the layout and both sides' sources.
void PrintCompareHeader(const tuner::CompareRequest& request, const tuner::ComparePlan& plan,
                        std::ostream& out) {
  const tuner::Workload& workload = plan.workload;
  out << "workload  " << workload.description << ": " << workload.messages.size() << " messages, "
      << FormatHumanBytes(workload.total_bytes) << " per pass; " << request.repeats << " repeats x "
      << request.rounds << "+ passes over " << request.duration_s << "+ s each, interleaved\n"
      << "inflight  " << plan.inflight.calls << " calls (" << plan.inflight.text << ")\n";
  if (!request.peer.empty()) {
    out << "peer      artune serve at " << request.peer
        << ": one connection, each side's config pushed live to both ends in turn\n";
  }
  if (plan.background_load > 0) {
    out << "load      " << plan.background_load << " CPU hog"
        << (plan.background_load == 1 ? "" : "s")
        << " beside the measurement (--background-load)\n";
  }
  for (const std::string& line : tuner::DescribeLayout(workload)) {
    out << "layout    " << line << "\n";
  }
  out << "default   " << plan.baseline.source << "\n"
      << "tuned     " << plan.tuned.source << "\n\n";
}

// The side-by-side table: the knobs that differ (and the two size thresholds
// always), then what each side measured.
void PrintCompareTable(const tuner::ComparePlan& plan, const tuner::PairedCompareResult& compared,
                       std::ostream& out) {
  const tuner::CompareSideSummary& base = compared.baseline.summary;
  const tuner::CompareSideSummary& tune = compared.tuned.summary;
  std::vector<std::vector<std::string>> rows = {{"", "DEFAULT", "TUNED"}};
  for (const transport::Knob& knob : transport::Knobs()) {
    const uint64_t a = knob.get(plan.baseline.config), b = knob.get(plan.tuned.config);
    if (a == b && knob.name != "eager_threshold" && knob.name != "chunk_size") continue;
    rows.push_back({std::string(knob.name), transport::FormatKnobValue(knob, a),
                    transport::FormatKnobValue(knob, b)});
  }
  rows.push_back({"fabric in use", compared.baseline.fabric, compared.tuned.fabric});
  rows.push_back({"workload pass (ms)", Fixed(base.workload_ms, 2), Fixed(tune.workload_ms, 2)});
  rows.push_back({"call p50 (us)", Fixed(base.p50_us, 1), Fixed(tune.p50_us, 1)});
  rows.push_back({"call p99 (us)", Fixed(base.p99_us, 1), Fixed(tune.p99_us, 1)});
  rows.push_back({"bandwidth (MB/s)", Fixed(base.mbps, 1), Fixed(tune.mbps, 1)});
  rows.push_back({"cpu (cores)", Fixed(base.cpu_cores, 2), Fixed(tune.cpu_cores, 2)});
  rows.push_back({"calls", std::to_string(base.calls), std::to_string(tune.calls)});
  rows.push_back({"validated", base.validated ? "yes" : "NO", tune.validated ? "yes" : "NO"});
  PrintTable(rows, {false, true, true}, out);
}

// The speedup line and the paired verdict under it.
void PrintCompareVerdict(const tuner::CompareRequest& request,
                         const tuner::PairedCompareResult& compared, std::ostream& out) {
  const tuner::PairedVerdict& verdict = compared.verdict;
  out << "\ntuned vs default: workload pass " << Fixed(compared.speedup, 2) << "x "
      << (compared.speedup >= 1 ? "faster" : "slower") << " (median of " << request.repeats
      << "; paired repeats " << Fixed(compared.paired_low, 2) << "x.."
      << Fixed(compared.paired_high, 2) << "x)\n";
  if (verdict.outcome == tuner::PairedOutcome::kTooFewPairs) {
    out << "  " << request.repeats << " repeat(s) only: too few to tell a config from "
        << "noise; use --repeats " << tuner::kMinPairsForVerdict << " or more\n";
  } else {
    out << "  paired: median " << Fixed(verdict.estimate.median, 3) << "x, "
        << static_cast<int>(verdict.estimate.achieved_confidence * 100 + 0.5) << " % interval "
        << Fixed(verdict.estimate.low, 3) << "x.." << Fixed(verdict.estimate.high, 3) << "x over "
        << verdict.estimate.count << " pairs: " << tuner::PairedOutcomeText(verdict.outcome)
        << "\n";
  }
}

}  // namespace

void PrintCompareText(const tuner::CompareRequest& request, const tuner::ComparePlan& plan,
                      const tuner::PairedCompareResult& compared, std::ostream& out) {
  PrintCompareHeader(request, plan, out);
  PrintCompareTable(plan, compared, out);
  PrintCompareVerdict(request, compared, out);
}

}  // namespace artune::report
