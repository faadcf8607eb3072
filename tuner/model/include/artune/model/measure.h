// Measuring a link model (link_model.h): `artune model measure`.
//
// Each protocol is forced by the knobs, so that every measured slice takes it:
//   eager              eager_threshold 1MiB (the knob's top), coalesce_limit 0
//   coalesced-eager    eager_threshold and coalesce_limit 1MiB, kCoalescedSlices
//                      equal slices per call
//   rendezvous-read    eager_threshold 16B, chunk_size 64MiB (one read of any slice)
//   chunked-rendezvous eager_threshold 16B, chunk_size and pipeline_depth of the curve
// (16 B: the ack reply stays eager, as under any real config; slices are >= 64 B)
// under each polling mode asked for. A group is one such config; a point one
// slice size under it at one number of calls in flight.
//
// Noisy hosts: the points are measured in rounds, every round visiting the groups
// (and within a group the sizes) in a fresh shuffled order, so that drift and
// bursts of load spread over all points instead of landing on a few; a point is
// the median of its rounds, and its spread (max - min) / median is kept. A
// measurement is one warm-up call and then `CallsFor` calls kept `inflight` deep,
// every reply validated (the ack method's checksum of every byte).
//
// Bounded: at most `rounds` rounds, and no round starts once the rounds so far
// say it would end past budget_s (at least min_rounds are measured whatever the
// budget, so every point has a median of several).
//
// Threading: blocks the calling thread; `progress` runs on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "artune/model/link_model.h"
#include "artune/status.h"
#include "artune/transport/config.h"

namespace artune::model {

struct MeasureOptions {
  transport::Config base;  // fabric, buffers, timeouts; the forced knobs are set per group
  std::string peer;        // host:port of `artune serve`; "": a server in this process
  std::vector<transport::PollingMode> pollings = {transport::PollingMode::kBusy,
                                                  transport::PollingMode::kEvent,
                                                  transport::PollingMode::kAdaptive};
  std::vector<uint32_t> inflights = {1, 4};
  std::vector<uint64_t> chunk_sizes = {64 * 1024, 512 * 1024, 4 * 1024 * 1024};
  std::vector<uint32_t> pipeline_depths = {1, 4, 16};
  uint64_t min_size = 64;
  uint64_t max_size = 10 * 1024 * 1024;  // a replayed slice is at most 10 MiB
  uint32_t min_rounds = 3;
  uint32_t rounds = 5;
  double budget_s = 30;
  uint64_t seed = 1;  // the shuffles and the payload content
};
// kInvalidArgument naming the field (no polling mode, min_rounds 0 or above rounds,
// a size outside 1B..10MiB, ...).
Status ValidateMeasureOptions(const MeasureOptions& options);

// Measured calls per point: 1 MiB of slices, at most 16 calls and at least
// `inflight` (so that the window fills).
uint32_t CallsFor(uint64_t size, uint32_t inflight);

struct MeasureProgress {
  uint32_t round = 0;           // 1-based
  uint32_t rounds_planned = 0;  // may shrink when the budget runs short
  size_t groups_done = 0, groups = 0;
  std::string group;  // "chunked-rendezvous 512KiB x4, event"
  double elapsed_s = 0;
};
using MeasureProgressFn = std::function<void(const MeasureProgress&)>;

struct MeasureReport {
  LinkModel model;
  uint32_t rounds = 0;
  double duration_s = 0;
  double median_spread = 0;  // over the points
  double worst_spread = 0;
  std::string worst_point;  // "rendezvous-read 4MiB x8, event"
};

// Errors: ValidateMeasureOptions's; the transport's (a server that does not start,
// a config a side refuses, a failed or corrupted call: the message names the point).
Result<MeasureReport> MeasureLinkModel(const MeasureOptions& options,
                                       const MeasureProgressFn& progress);

// "chunked-rendezvous 512KiB x4, event": the group of a point.
std::string GroupLabel(const ModelPoint& point);

}  // namespace artune::model
