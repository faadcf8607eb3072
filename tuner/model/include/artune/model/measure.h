// Measuring a link model (link_model.h): `artune model measure`.
//
// Each protocol is forced by the knobs, so that every measured slice takes it:
//   eager              eager_threshold 1MiB (the knob's top), coalesce_limit 0
//   coalesced-eager    eager_threshold and coalesce_limit 1MiB, kCoalescedSlices
//                      equal slices per call
//   rendezvous-read    eager_threshold 16B, chunk_size 64MiB (one read of any slice)
//   chunked-rendezvous eager_threshold 16B, chunk_size and pipeline_depth of the curve
// (16 B: the ack reply stays eager, as under any real config; slices are >= 64 B)
// under each polling mode asked for (busy polling only where the host has a core
// free beside its spinning threads, BusyPollingSkipReason). A group is one such
// config; a point one slice size under it at one number of calls in flight. A
// rendezvous group also measures calls of several slices (slice_counts) at x4
// sizes and at the largest slice under the cap (SeveralSlicePoints), at the first
// inflight count only, each call at most max_call_bytes (link_model.h's SlicesFactor): the
// anchors (SeveralSliceAnchors) whatever the budget, the x4 steps between them
// only while the round keeps to the budget's schedule.
//
// About 30 s per link on a loaded host (curve_sampling.h): a group's sizes are a
// coarse log2 ladder (x8), refined only where the curve bends and log-log
// interpolation misses the measured midpoint by more than refine_tolerance; a
// point is one warm-up call, then samples of `CallsFor` calls kept `inflight` deep
// (a sample stops issuing calls after kSampleSeconds) until two agree within 10 %
// (at most 5 samples, at most 0.1 s; one sample once the round is behind the
// budget's schedule); chunked depths past the chunks of the largest slice are
// not measured (they read every chunk at once, like the last one kept). Every
// reply is validated (the ack method's checksum of every byte).
//
// Rounds: one by default, the groups in shuffled order. More (`rounds`) measure
// the first round's sizes again in fresh shuffled orders, and a point is the median
// of its rounds. Bounded: a round refines a curve only while it keeps to its share
// of budget_s, no round past the first starts once the rounds so far say it would
// end past budget_s (min_rounds are measured whatever the budget).
//
// Threading: blocks the calling thread; `progress` runs on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "artune/model/curve_sampling.h"
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
  std::vector<uint32_t> slice_counts = {2, 8};  // each 2..64; empty: one slice per call only
  uint64_t max_call_bytes = 16ull << 20;        // a call of several slices, at most
  uint64_t min_size = 64;
  uint64_t max_size = 10 * 1024 * 1024;  // a replayed slice is at most 10 MiB
  uint32_t min_rounds = 1;
  uint32_t rounds = 1;
  double budget_s = 30;
  StableOptions stability;         // when a point's samples are enough
  uint64_t coarse_factor = 16;     // the first sizes of a curve: min, min * 16, ...
  double refine_tolerance = 0.15;  // a midpoint missed by more: its halves are refined
  uint64_t seed = 1;               // the shuffles and the payload content
  // The cores this process may run on (BusyPollingSkipReason); 0: its CPU affinity.
  uint32_t usable_cores = 0;
};
// kInvalidArgument naming the field (no polling mode, min_rounds 0 or above rounds,
// a size outside 1B..10MiB, ...).
Status ValidateMeasureOptions(const MeasureOptions& options);

// Why busy polling is left out of a measure on this host, "" when it is measured.
// Busy polling spins a progress thread per side (both in this process on
// loopback, this side's only with a peer), and the caller and the server's
// handler need a core beside them: with fewer cores each hand-off waits for a
// scheduler slice, so a busy point measures the scheduler, not the link (on 2
// cores, loopback tcp: busy polling's groups 66-80 % of a measure's time, one
// group 2-9 s from run to run, its several-slice factors negative,
// bench/predict.md). Busy polling is still measured when it is the only mode
// asked for.
std::string BusyPollingSkipReason(const MeasureOptions& options);

// The calls of several slices a rendezvous group of slice sizes first..last
// measures: (size, slices) for each of options.slice_counts at the sizes first,
// first * 4, ..., last whose call stays within max_call_bytes, and at the largest
// slice such a call carries (max_call_bytes / slices, at most last), so that every
// rendezvous group has its factor at the sizes of multi-MiB messages. Empty for an
// eager protocol.
std::vector<std::pair<uint64_t, uint32_t>> SeveralSlicePoints(transport::Protocol protocol,
                                                              uint64_t first, uint64_t last,
                                                              const MeasureOptions& options);

// The points of SeveralSlicePoints a round behind the budget's schedule still
// measures: those on the coarse ladder (first, first * coarse_factor, ...) and each
// slice count's largest (at the cap or `last`). The factor between them is the
// ratio of two log-log interpolations, as between the x4 steps; the cap points keep
// the factor of multi-MiB slices measured, not held from 256KiB.
std::vector<std::pair<uint64_t, uint32_t>> SeveralSliceAnchors(transport::Protocol protocol,
                                                               uint64_t first, uint64_t last,
                                                               const MeasureOptions& options);

// Calls per sample: 256 KiB of slices, at most 16 calls and at least `inflight`
// (so that the window fills); fewer when the calls outlast kSampleSeconds.
inline constexpr double kSampleSeconds = 0.02;
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
  double median_spread = 0;    // over the points
  size_t unstable_points = 0;  // whose samples never agreed (the tightest were kept)
  double worst_spread = 0;
  std::string worst_point;           // "rendezvous-read, event, 4MiB x1, 8 slices per call"
  std::string busy_polling_skipped;  // BusyPollingSkipReason's; "" when measured or not asked
};

// Errors: ValidateMeasureOptions's; the transport's (a server that does not start,
// a config a side refuses, a failed or corrupted call: the message names the point).
Result<MeasureReport> MeasureLinkModel(const MeasureOptions& options,
                                       const MeasureProgressFn& progress);

// "chunked-rendezvous 512KiB x4, event": the group of a point.
std::string GroupLabel(const ModelPoint& point);

}  // namespace artune::model
