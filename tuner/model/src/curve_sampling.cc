#include "artune/model/curve_sampling.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <deque>
#include <numeric>
#include <utility>

#include "artune/model/link_model.h"

namespace artune::model {
namespace {

// The tightest window of `count` values of sorted `values`: its first index.
size_t TightestWindow(const std::vector<double>& sorted, size_t count) {
  size_t best = 0;
  for (size_t i = 1; i + count <= sorted.size(); ++i) {
    if (sorted[i + count - 1] / sorted[i] < sorted[best + count - 1] / sorted[best]) best = i;
  }
  return best;
}

}  // namespace

Status ValidateStableOptions(const StableOptions& options) {
  if (options.agreeing == 0 || options.agreeing > options.max_samples) {
    return Status::InvalidArgument("agreeing samples must be 1..max_samples (" +
                                   std::to_string(options.max_samples) + ")");
  }
  if (!(options.tolerance >= 0)) return Status::InvalidArgument("tolerance must be >= 0");
  return Status::Ok();
}

Result<StableFigure> SampleUntilStable(const StableOptions& options,
                                       const std::function<Result<double>()>& sample) {
  ARTUNE_RETURN_IF_ERROR(ValidateStableOptions(options));
  std::vector<double> sorted;
  StableFigure figure;
  const auto start = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
               options.max_seconds;
  };
  while (figure.samples < options.max_samples) {
    ARTUNE_ASSIGN_OR_RETURN(const double value, sample());
    if (!(value > 0)) return Status::InvalidArgument("a sample must be positive");
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), value), value);
    ++figure.samples;
    const bool last_chance = out_of_time();
    if (sorted.size() < options.agreeing && !last_chance) continue;
    const size_t window = std::min<size_t>(options.agreeing, sorted.size());
    const size_t first = TightestWindow(sorted, window);
    const size_t last = first + window - 1;
    figure.value = std::accumulate(sorted.begin() + static_cast<std::ptrdiff_t>(first),
                                   sorted.begin() + static_cast<std::ptrdiff_t>(last) + 1, 0.0) /
                   static_cast<double>(window);
    figure.stable =
        window == options.agreeing && sorted[last] <= sorted[first] * (1 + options.tolerance);
    if (figure.stable || last_chance) break;
  }
  figure.low = sorted.front();
  figure.high = sorted.back();
  return figure;
}

Result<std::map<uint64_t, std::vector<double>>> SampleCurve(const LadderOptions& options,
                                                            const SizeSampleFn& sample,
                                                            const RefineFn& may_refine) {
  if (options.first == 0 || options.first > options.last || options.coarse_factor < 4 ||
      !std::has_single_bit(options.coarse_factor)) {
    return Status::InvalidArgument(
        "a curve needs 0 < first <= last and a coarse factor that is a power of two >= 4");
  }
  std::map<uint64_t, std::vector<double>> measured;
  auto measure = [&](uint64_t size) -> Status {
    ARTUNE_ASSIGN_OR_RETURN(std::vector<double> values, sample(size));
    measured[size] = std::move(values);
    return Status::Ok();
  };
  for (uint64_t size = options.first; size <= options.last; size *= options.coarse_factor) {
    ARTUNE_RETURN_IF_ERROR(measure(size));
    if (size > options.last / options.coarse_factor) break;
  }
  if (!measured.contains(options.last)) ARTUNE_RETURN_IF_ERROR(measure(options.last));
  // Coarse intervals whose log-log slope differs from a neighbour's by more than
  // slope_change hold a bend: only those are refined; the others are straight
  // enough for interpolation (a curve that is flat, then proportional to the size,
  // is refined around its knee only).
  std::vector<std::pair<uint64_t, uint64_t>> coarse;
  for (auto it = measured.begin(); std::next(it) != measured.end(); ++it) {
    coarse.emplace_back(it->first, std::next(it)->first);
  }
  std::vector<std::vector<double>> slopes;
  for (const auto& [low, high] : coarse) {
    std::vector<double> slope;
    const std::vector<double>& at_low = measured[low];
    const std::vector<double>& at_high = measured[high];
    for (size_t i = 0; i < at_low.size() && i < at_high.size(); ++i) {
      slope.push_back(std::log(at_high[i] / at_low[i]) /
                      std::log(static_cast<double>(high) / static_cast<double>(low)));
    }
    slopes.push_back(std::move(slope));
  }
  auto bends = [&](size_t a, size_t b) {
    for (size_t i = 0; i < slopes[a].size() && i < slopes[b].size(); ++i) {
      if (std::abs(slopes[a][i] - slopes[b][i]) > options.slope_change) return true;
    }
    return false;
  };
  std::deque<std::pair<uint64_t, uint64_t>> intervals;
  for (size_t i = 0; i < coarse.size(); ++i) {
    const bool alone = coarse.size() == 1;
    if (alone || (i > 0 && bends(i - 1, i)) || (i + 1 < coarse.size() && bends(i, i + 1))) {
      intervals.push_back(coarse[i]);
    }
  }
  while (!intervals.empty()) {
    const auto [low, high] = intervals.front();
    intervals.pop_front();
    if (high / low < 4) continue;
    // The log2 midpoint: low times half the doublings between them.
    const int doublings = std::bit_width(high / low) - 1;
    const uint64_t middle = low << (doublings / 2);
    if (middle <= low || middle >= high) continue;
    if (may_refine && !may_refine()) break;
    ARTUNE_RETURN_IF_ERROR(measure(middle));
    const std::vector<double>& at_low = measured[low];
    const std::vector<double>& at_high = measured[high];
    const std::vector<double>& at_middle = measured[middle];
    bool missed = false;
    for (size_t i = 0; i < at_middle.size() && i < at_low.size() && i < at_high.size(); ++i) {
      const double expected = InterpolateLogLog(
          {{static_cast<double>(low), at_low[i]}, {static_cast<double>(high), at_high[i]}},
          static_cast<double>(middle));
      if (std::abs(expected - at_middle[i]) > options.tolerance * at_middle[i]) missed = true;
    }
    if (missed) {
      intervals.emplace_back(low, middle);
      intervals.emplace_back(middle, high);
    }
  }
  return measured;
}

}  // namespace artune::model
