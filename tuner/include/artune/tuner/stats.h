// Summary statistics over latency samples (microseconds or any unit: the functions
// do not care), and the median with a distribution-free confidence interval that
// the sweep uses to compare trials.
//
// Pure functions; empty input gives a zeroed summary (count 0).
#pragma once

#include <cstddef>
#include <span>

namespace artune::tuner {

struct Summary {
  size_t count = 0;
  double p50 = 0, p99 = 0, mean = 0, stddev = 0, min = 0, max = 0;
};

// Percentiles by linear interpolation between closest ranks; stddev is the sample
// standard deviation (n - 1), 0 for a single sample.
Summary Summarize(std::span<const double> samples);

// The q-quantile (q in [0, 1]) of samples that are already sorted ascending.
double QuantileOfSorted(std::span<const double> sorted, double q);

// Median and the order-statistic interval [low, high] that covers the true median
// with probability >= `confidence` (binomial, no assumption on the distribution).
// With too few samples for that confidence the interval is [min, max] and
// `achieved_confidence` says what it really covers.
struct MedianEstimate {
  double median = 0;
  double low = 0;
  double high = 0;
  double achieved_confidence = 0;
  size_t count = 0;
};
MedianEstimate MedianWithConfidence(std::span<const double> samples, double confidence = 0.95);

// Paired speedups: each is the baseline's time over the candidate's, from two
// measurements taken back to back (alternating which goes first). The machine's
// drift, which in the lab moves one config's time by 20 % within a minute, cancels
// within a pair; the median's order-statistic interval assumes nothing about the
// pairs' spread, and one pair hit by a stray stall cannot move it.
enum class PairedOutcome {
  kTooFewPairs,  // fewer than kMinPairsForVerdict pairs
  kFaster,       // the interval of the median lies above 1
  kSlower,       // below 1
  kWithinNoise,  // it holds 1
};
// With fewer pairs no interval of the median reaches 95 % (5 pairs: [min, max]
// covers 94 %).
inline constexpr size_t kMinPairsForVerdict = 6;
struct PairedVerdict {
  MedianEstimate estimate;  // of the speedups, at 95 %
  PairedOutcome outcome = PairedOutcome::kTooFewPairs;
};
PairedVerdict JudgePairedSpeedups(std::span<const double> speedups);
// "too_few_pairs", "faster", "slower", "within_noise".
const char* PairedOutcomeName(PairedOutcome outcome);

}  // namespace artune::tuner
