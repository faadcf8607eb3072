// JSON shapes of stored records that more than one writer shares: `artune results`,
// `artune sweep` and `artune captures` print them (artune/tuner/trial_json.h), and
// the cluster run's wire (cluster_wire.cc) sends them between ranks, so a field is
// named once for both.
// Header-only: cluster_wire.cc is also compiled on its own into its tests.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "artune/db/store.h"

namespace artune::db {

// The text fields of a sweep by their JSON names, in the order `results --sweeps
// --json` prints them (after "id"). The wire sends default_knobs too.
inline constexpr std::array<std::pair<const char*, std::string SweepRecord::*>, 10>
    kSweepTextFields = {{{"created_at", &SweepRecord::created_at},
                         {"finished_at", &SweepRecord::finished_at},
                         {"host", &SweepRecord::host},
                         {"peer", &SweepRecord::peer},
                         {"fabric", &SweepRecord::fabric},
                         {"objective", &SweepRecord::objective},
                         {"goal", &SweepRecord::goal},
                         {"strategy", &SweepRecord::strategy},
                         {"workload", &SweepRecord::workload},
                         {"search_space", &SweepRecord::search_space}}};

// The fields of a trial that its printed JSON (`sweep --json`, `results --sweep
// --json`: after "id") and the cluster run's wire both carry, in the printed order:
// knobs, status, objective, ci_low, ci_high, samples, remeasured, validated, error,
// duration_s, metrics. The wire adds started_at and config. `Json`: as below.
template <typename Json>
void AddTrialJson(Json& out, const TrialRecord& trial) {
  out["knobs"] = trial.knobs;
  out["status"] = std::string(TrialStatusName(trial.status));
  out["objective"] = trial.objective;
  out["ci_low"] = trial.ci_low;
  out["ci_high"] = trial.ci_high;
  out["samples"] = trial.samples;
  out["remeasured"] = trial.remeasured;
  out["validated"] = trial.validated;
  out["error"] = trial.error;
  out["duration_s"] = trial.duration_s;
  out["metrics"] = trial.metrics;
}

// One method row of a capture: method, direction, messages, bytes, scheme, small,
// medium, large. `Json`: nlohmann::ordered_json for printing, nlohmann::json for
// the wire.
template <typename Json>
Json CaptureMethodJson(const CaptureMethodRow& row) {
  return Json{{"method", row.method}, {"direction", row.direction}, {"messages", row.messages},
              {"bytes", row.bytes},   {"scheme", row.scheme},       {"small", row.small},
              {"medium", row.medium}, {"large", row.large}};
}

}  // namespace artune::db
