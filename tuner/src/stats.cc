#include "artune/tuner/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "artune/base/enum_names.h"

namespace artune::tuner {

double QuantileOfSorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  double rank = q * static_cast<double>(sorted.size() - 1);
  size_t lower = static_cast<size_t>(std::floor(rank));
  size_t upper = std::min(lower + 1, sorted.size() - 1);
  double fraction = rank - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

Summary Summarize(std::span<const double> samples) {
  Summary summary;
  summary.count = samples.size();
  if (samples.empty()) return summary;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  summary.min = sorted.front();
  summary.max = sorted.back();
  summary.p50 = QuantileOfSorted(sorted, 0.50);
  summary.p99 = QuantileOfSorted(sorted, 0.99);
  // Welford: stable for long runs of similar values.
  double mean = 0, m2 = 0;
  size_t n = 0;
  for (double x : samples) {
    ++n;
    double delta = x - mean;
    mean += delta / static_cast<double>(n);
    m2 += delta * (x - mean);
  }
  summary.mean = mean;
  summary.stddev = n > 1 ? std::sqrt(m2 / static_cast<double>(n - 1)) : 0.0;
  return summary;
}

MedianEstimate MedianWithConfidence(std::span<const double> samples, double confidence) {
  MedianEstimate estimate;
  estimate.count = samples.size();
  if (samples.empty()) return estimate;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  estimate.median = QuantileOfSorted(sorted, 0.5);

  // The number of samples below the true median is Binomial(n, 1/2). The interval
  // [x(j), x(n-1-j)] (0-based order statistics) covers the median with probability
  // 1 - 2 * P(B <= j). Take the narrowest such interval that reaches `confidence`.
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  auto log_choose = [n](size_t k) {
    return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
           std::lgamma(static_cast<double>(n - k) + 1);
  };
  double tail = 0;  // P(B <= j)
  size_t best_j = 0;
  double best_coverage = 1.0 - 2.0 * std::exp(log_choose(0) + log_half_n);
  bool found = false;
  for (size_t j = 0; j < n / 2; ++j) {
    tail += std::exp(log_choose(j) + log_half_n);
    double coverage = 1.0 - 2.0 * tail;
    if (coverage >= confidence) {
      best_j = j;
      best_coverage = coverage;
      found = true;
    } else {
      break;
    }
  }
  if (!found) {
    // Too few samples: the widest interval, with the coverage it really has.
    best_j = 0;
    best_coverage = std::max(0.0, 1.0 - 2.0 * std::exp(log_half_n));
  }
  estimate.low = sorted[best_j];
  estimate.high = sorted[n - 1 - best_j];
  estimate.achieved_confidence = best_coverage;
  return estimate;
}

PairedVerdict JudgePairedSpeedups(std::span<const double> speedups) {
  PairedVerdict verdict;
  verdict.estimate = MedianWithConfidence(speedups);
  if (speedups.size() < kMinPairsForVerdict) return verdict;
  if (verdict.estimate.low > 1) {
    verdict.outcome = PairedOutcome::kFaster;
  } else if (verdict.estimate.high < 1) {
    verdict.outcome = PairedOutcome::kSlower;
  } else {
    verdict.outcome = PairedOutcome::kWithinNoise;
  }
  return verdict;
}

const char* PairedOutcomeName(PairedOutcome outcome) {
  // NUL-terminated literals: the callers take a C string.
  static constexpr std::array<EnumName<PairedOutcome>, 3> kNames = {{
      {PairedOutcome::kFaster, "faster"},
      {PairedOutcome::kSlower, "slower"},
      {PairedOutcome::kWithinNoise, "within_noise"},
  }};
  return NameOf(kNames, outcome, "too_few_pairs").data();
}

}  // namespace artune::tuner
