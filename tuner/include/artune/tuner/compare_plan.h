// What `artune apply compare` measures, resolved from its request: the two sides'
// configs (the defaults or a file; a file, the one `artune apply config` wrote, or
// a stored sweep's chosen config laid over the baseline), the workload (a stored
// capture's replay or a TF-gRPC-Bench scheme), the calls in flight and the CPU hogs
// beside the measurement. The CLI parses its flags into a CompareRequest, calls
// PlanCompare and MeasureCompare, and prints (paired_compare.h measures).
//
// Threading: blocking calls on the caller's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/tuner/paired_compare.h"
#include "artune/tuner/sweep_choice.h"
#include "artune/tuner/sweep_plan.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

struct CompareRequest {
  std::optional<int64_t> capture_id;  // replay this stored capture; else `scheme`
  std::string scheme = "skew";
  std::string baseline_path;        // "": the transport's defaults
  std::string tuned_path;           // "": the file `artune apply config` wrote
  std::optional<int64_t> sweep_id;  // the tuned side is this sweep's chosen config
  std::string fabric;               // "": each side's own
  uint32_t repeats = 3;
  uint32_t rounds = 2;      // passes per measurement, at least
  double duration_s = 0.5;  // and until this long (as `artune sweep --duration`)
  uint32_t warmup_rounds = 1;
  uint32_t messages = 32;
  std::optional<uint32_t> inflight;  // nullopt: as the sweep measured (CompareInflight)
  uint64_t seed = 1;
  std::string background_load = "0";  // N CPU hogs or "all" (background_load.h)
  std::string peer;  // "": loopback; else `artune serve` (PairedCompareOptions::peer)
};

// How many calls the replay keeps in flight, and why that many.
struct CompareInflight {
  uint32_t calls = kDefaultSweepInflight;
  std::string source;  // "flag" | "sweep" | "default"
  std::string text;    // for the header line, e.g. "as sweep 4 measured"
};

// What one compare measures: the two sides, the workload replayed over both and how.
struct ComparePlan {
  PairedCompareOptions options;
  uint32_t background_load = 0;  // CPU hogs beside the measurement
  CompareSideSpec baseline{"default", "", transport::Config{}};
  CompareSideSpec tuned{"tuned", "", transport::Config{}};
  std::optional<SweepChoice> choice;  // set with sweep_id
  CompareInflight inflight;
  Workload workload;
};

// Resolves the request into both sides' configs, the inflight and the workload. A
// sweep whose stored inflight is unusable gets the sweep's default, with a note on
// `notes`. Errors: the options' and --background-load's kInvalidArgument (with a
// peer, CheckComparableOverOneConnection's too), the config
// files' (ARTUNE_* variables are ignored: each side is exactly its file), kNotFound
// (no tuned file), ReadSweepChoice's, the workload's, `open_store`'s.
Result<ComparePlan> PlanCompare(const CompareRequest& request, const StoreOpener& open_store,
                                std::ostream& notes);

// Measures both sides, interleaved, with the plan's CPU hogs beside them (gone
// before it returns, on an error too). Errors: BackgroundLoad's, RunPairedCompare's.
Result<PairedCompareResult> MeasureCompare(const ComparePlan& plan);

}  // namespace artune::tuner
