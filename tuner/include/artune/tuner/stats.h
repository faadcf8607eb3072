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

}  // namespace artune::tuner
