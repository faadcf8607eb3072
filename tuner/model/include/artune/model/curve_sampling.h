// How `artune model measure` (measure.h) spends its seconds: a point is sampled
// only until its figure is stable, and a curve is measured at coarse log2 sizes
// and refined only where it bends, the rest interpolated as the model's lookups
// interpolate (log-log, link_model.h).
//
// Threading: blocks the calling thread; the callbacks run on it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "artune/status.h"

namespace artune::model {

struct StableOptions {
  uint32_t agreeing = 2;  // samples that must agree within `tolerance`
  uint32_t max_samples = 5;
  double tolerance = 0.10;  // (largest - smallest) / smallest of the agreeing samples
  // Seconds of sampling after which the samples so far stand (0: no limit): a
  // protocol that takes milliseconds per call on a starved host is not sampled for
  // seconds.
  double max_seconds = 0.1;
};

struct StableFigure {
  double value = 0;          // the mean of the tightest `agreeing` samples
  double low = 0, high = 0;  // over every sample taken
  uint32_t samples = 0;      // taken
  bool stable = false;       // false: max_samples were taken without agreement
};

// kInvalidArgument for agreeing 0 or above max_samples, or a negative tolerance.
Status ValidateStableOptions(const StableOptions& options);

// Takes samples until `agreeing` of them lie within `tolerance` of each other, at
// most max_samples and, past max_seconds, no more; the figure is the mean of the
// tightest such group (of fewer when time ran out first; on a loaded host a burst
// of load makes a sample slow, rarely fast: outliers are left out).
// Errors: ValidateStableOptions's; the first failed sample's; kInvalidArgument for
// a sample that is not positive.
Result<StableFigure> SampleUntilStable(const StableOptions& options,
                                       const std::function<Result<double>()>& sample);

struct LadderOptions {
  uint64_t first = 64;
  uint64_t last = 10ull << 20;
  uint64_t coarse_factor = 8;  // a power of two, at least 4
  double slope_change = 0.25;  // log-log slope change between coarse intervals: a bend
  double tolerance = 0.15;     // a midpoint missed by more than this: refine around it
};

// The values of one size (one per calls in flight, say), all positive.
using SizeSampleFn = std::function<Result<std::vector<double>>(uint64_t size)>;
// Whether to refine further (false: the coarse sizes and the refinements so far
// stand); asked before every refining measurement.
using RefineFn = std::function<bool()>;

// Measures `first`, first * coarse_factor, ... and `last`. A coarse interval whose
// log-log slope differs by more than slope_change from a neighbour's (any of the
// values) holds a bend: its midpoint on the log2 scale is measured, and when
// log-log interpolation between its ends misses any of the midpoint's values by
// more than `tolerance` (relative to the measured value), both halves are refined
// the same way (down to intervals of 4x); the rest is left to interpolation. Returns every
// measured size's values. Errors: kInvalidArgument for first 0, first > last or a
// coarse_factor that is not a power of two >= 4; the callback's.
Result<std::map<uint64_t, std::vector<double>>> SampleCurve(const LadderOptions& options,
                                                            const SizeSampleFn& sample,
                                                            const RefineFn& may_refine);

}  // namespace artune::model
