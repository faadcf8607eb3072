#include "artune/tuner/compare_report.h"

#include <array>
#include <optional>
#include <string>

#include "artune/base/enum_names.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/trial_json.h"

namespace artune::tuner {
namespace {

using nlohmann::ordered_json;

ordered_json CompareSideJson(const CompareSide& side) {
  const CompareSideSummary& s = side.summary;
  ordered_json runs = ordered_json::array(), passes = ordered_json::array();
  for (const auto& run : side.runs) {
    runs.push_back(PassMilliseconds(run));
    passes.push_back(run.passes);
  }
  return ordered_json{{"source", side.spec.source},
                      {"fabric", side.fabric},
                      {"config", transport::ConfigToMap(side.spec.config)},
                      {"workload_ms", s.workload_ms},
                      {"workload_ms_per_repeat", runs},
                      {"passes_per_repeat", passes},
                      {"latency_p50_us", s.p50_us},
                      {"latency_p99_us", s.p99_us},
                      {"bandwidth_mbps", s.mbps},
                      {"cpu_cores", s.cpu_cores},
                      {"calls", s.calls},
                      {"validated", s.validated}};
}

// With --sweep: which of its configs the tuned side is ("final_remeasurement": the
// one its verdict chose; "best_trial": no verdict named one) and its stored trial.
ordered_json SweepWinnerJson(const std::optional<SweepChoice>& choice) {
  if (!choice) return ordered_json();
  return {{"sweep_id", choice->sweep.id},
          {"knobs", KnobsJson(choice->knobs)},
          {"chosen_by", choice->chosen_by_verdict ? "final_remeasurement" : "best_trial"},
          {"trial_id", choice->trial ? ordered_json(choice->trial->id) : ordered_json()}};
}

}  // namespace

ordered_json CompareJson(const CompareRequest& request, const ComparePlan& plan,
                         const PairedCompareResult& compared) {
  const Workload& workload = plan.workload;
  ordered_json out;
  out["workload"] = workload.description;
  out["layout"] = LayoutJson(workload);
  out["messages"] = workload.messages.size();
  out["workload_bytes"] = workload.total_bytes;
  out["repeats"] = request.repeats;
  out["rounds"] = request.rounds;
  out["duration_s"] = request.duration_s;
  out["inflight"] = plan.inflight.calls;
  out["inflight_source"] = plan.inflight.source;
  out["background_load"] = plan.background_load;
  out["peer"] = request.peer.empty() ? "loopback" : request.peer;
  out["default"] = CompareSideJson(compared.baseline);
  out["tuned"] = CompareSideJson(compared.tuned);
  out["tuned"]["sweep_winner"] = SweepWinnerJson(plan.choice);
  out["speedup"] = compared.speedup;
  out["paired_speedups"] = compared.paired_speedups;
  out["paired_speedup"] = PairedEstimateJson(compared.verdict.estimate);
  // faster | slower: the interval of the paired median clears 1; within_noise;
  // too_few_pairs: fewer than kMinPairsForVerdict repeats.
  out["verdict"] = PairedOutcomeName(compared.verdict.outcome);
  out["consistent"] =
      !compared.paired_speedups.empty() && (compared.paired_low > 1 || compared.paired_high < 1);
  return out;
}

const char* PairedOutcomeText(PairedOutcome outcome) {
  // NUL-terminated literals: the callers take a C string.
  static constexpr std::array<EnumName<PairedOutcome>, 3> kTexts = {{
      {PairedOutcome::kFaster, "the tuned config is faster beyond noise"},
      {PairedOutcome::kSlower, "the tuned config is slower beyond noise"},
      {PairedOutcome::kWithinNoise, "the interval holds 1x: the difference is within noise"},
  }};
  return NameOf(kTexts, outcome, "too few pairs to tell").data();
}

Status CheckCompareValidated(const PairedCompareResult& compared) {
  const CompareSideSummary& base = compared.baseline.summary;
  const CompareSideSummary& tune = compared.tuned.summary;
  if (base.validated && tune.validated) return Status::Ok();
  return Status::Corruption("a replayed call failed validation: " +
                            (base.validated ? tune.validation_error : base.validation_error));
}

}  // namespace artune::tuner
