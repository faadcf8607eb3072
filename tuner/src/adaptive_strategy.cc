// Adaptive search: a coarse lattice (ends and middle of every axis), then pattern
// (compass) search on the grid's index lattice from the best point found.
//
// Why this one: the axes are log-spaced sizes, and transfer time as a function of
// log(eager threshold) and log(chunk size) is close to unimodal with broad valleys
// (copy cost grows on one side of the crossover, read and per-chunk overheads on
// the other). A compass search exploits that with few points, needs no extra
// knobs, and measures every point at full length: successive halving would rank
// points on short runs, where a transport's noise is largest. The final step-1
// poll also tries the diagonal neighbours, which catches the one coupling the two
// default knobs have (a larger eager threshold moves the chunk-size optimum).
#include <algorithm>
#include <map>

#include "artune/tuner/strategy.h"

namespace artune::tuner {
namespace {

class AdaptiveStrategy final : public Strategy {
 public:
  AdaptiveStrategy(std::vector<size_t> axis_sizes, Point start)
      : axis_sizes_(std::move(axis_sizes)), start_(std::move(start)) {
    if (start_.size() != axis_sizes_.size()) start_.assign(axis_sizes_.size(), 0);
    for (size_t i = 0; i < axis_sizes_.size(); ++i) {
      start_[i] = std::min(start_[i], axis_sizes_[i] == 0 ? 0 : axis_sizes_[i] - 1);
    }
  }

  std::string_view name() const override { return "adaptive"; }

  size_t EstimatedTrials() const override {
    // Each level polls at most 2 points per axis; a few moves per level, plus the
    // diagonal poll at the end. Never more than the grid.
    size_t grid = axis_sizes_.empty() ? 0 : 1;
    size_t levels = 1;
    for (size_t size : axis_sizes_) {
      grid *= size;
      size_t step = InitialStep(size), count = 1;
      while (step > 1) {
        step = (step + 1) / 2;
        ++count;
      }
      levels = std::max(levels, count);
    }
    const size_t estimate = 1 + CoarseLattice().size() + levels * 2 * 2 * axis_sizes_.size() + 4;
    return std::min(grid, estimate);
  }

  Status Search(const EvaluateFn& evaluate) override {
    for (size_t size : axis_sizes_) {
      if (size == 0) return Status::Ok();
    }
    ARTUNE_ASSIGN_OR_RETURN(std::optional<double> start_cost, Measure(start_, evaluate));
    Point best = start_;
    std::optional<double> best_cost = start_cost;
    // A coarse look at the whole space first (ends and middle of every axis), so a
    // noisy or two-valley surface does not trap the local search near the start.
    for (const Point& point : CoarseLattice()) {
      ARTUNE_ASSIGN_OR_RETURN(std::optional<double> cost, Measure(point, evaluate));
      if (cost && (!best_cost || *cost < *best_cost)) {
        best = point;
        best_cost = cost;
      }
    }
    std::vector<size_t> steps;
    for (size_t size : axis_sizes_) steps.push_back(InitialStep(size));

    while (true) {
      const bool at_unit_steps =
          std::all_of(steps.begin(), steps.end(), [](size_t step) { return step == 1; });
      std::vector<Point> candidates = AxisNeighbours(best, steps);
      if (at_unit_steps) {
        for (Point& diagonal : DiagonalNeighbours(best)) candidates.push_back(std::move(diagonal));
      }
      Point improved = best;
      std::optional<double> improved_cost = best_cost;
      for (const Point& candidate : candidates) {
        ARTUNE_ASSIGN_OR_RETURN(std::optional<double> cost, Measure(candidate, evaluate));
        if (cost && (!improved_cost || *cost < *improved_cost)) {
          improved = candidate;
          improved_cost = cost;
        }
      }
      if (improved != best) {
        best = improved;
        best_cost = improved_cost;
        continue;  // poll again around the new centre at the same steps
      }
      if (at_unit_steps) return Status::Ok();  // a local optimum of the lattice
      for (size_t& step : steps) step = std::max<size_t>(1, step / 2);
    }
  }

 private:
  static size_t InitialStep(size_t size) { return std::max<size_t>(1, size / 4); }

  // Ends and middle of every axis, crossed; empty when that would cost more than a
  // tenth of the grid (many axes), where the local search alone must do.
  std::vector<Point> CoarseLattice() const {
    std::vector<std::vector<size_t>> levels;
    size_t lattice = 1, grid = 1;
    for (size_t size : axis_sizes_) {
      std::vector<size_t> picks = {0, (size - 1) / 2, size - 1};
      picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
      lattice *= picks.size();
      grid *= size;
      levels.push_back(std::move(picks));
    }
    if (lattice * 10 > grid) return {};
    std::vector<Point> points(1);
    for (const auto& picks : levels) {
      std::vector<Point> next;
      for (const Point& prefix : points) {
        for (size_t pick : picks) {
          Point point = prefix;
          point.push_back(pick);
          next.push_back(std::move(point));
        }
      }
      points = std::move(next);
    }
    return points;
  }

  // Measures a point once; later requests for it are answered from memory.
  Result<std::optional<double>> Measure(const Point& point, const EvaluateFn& evaluate) {
    auto known = costs_.find(point);
    if (known != costs_.end()) return known->second;
    ARTUNE_ASSIGN_OR_RETURN(std::optional<double> cost, evaluate(point));
    costs_.emplace(point, cost);
    return cost;
  }

  std::vector<Point> AxisNeighbours(const Point& centre, const std::vector<size_t>& steps) const {
    std::vector<Point> points;
    for (size_t axis = 0; axis < centre.size(); ++axis) {
      if (centre[axis] >= steps[axis]) {
        Point lower = centre;
        lower[axis] -= steps[axis];
        points.push_back(std::move(lower));
      }
      if (centre[axis] + steps[axis] < axis_sizes_[axis]) {
        Point upper = centre;
        upper[axis] += steps[axis];
        points.push_back(std::move(upper));
      }
    }
    return points;
  }

  // The +-1 diagonal neighbours in every pair of axes.
  std::vector<Point> DiagonalNeighbours(const Point& centre) const {
    std::vector<Point> points;
    for (size_t a = 0; a < centre.size(); ++a) {
      for (size_t b = a + 1; b < centre.size(); ++b) {
        for (int da : {-1, 1}) {
          for (int db : {-1, 1}) {
            if ((da < 0 && centre[a] == 0) || (da > 0 && centre[a] + 1 >= axis_sizes_[a]) ||
                (db < 0 && centre[b] == 0) || (db > 0 && centre[b] + 1 >= axis_sizes_[b])) {
              continue;
            }
            Point diagonal = centre;
            diagonal[a] = da < 0 ? centre[a] - 1 : centre[a] + 1;
            diagonal[b] = db < 0 ? centre[b] - 1 : centre[b] + 1;
            points.push_back(std::move(diagonal));
          }
        }
      }
    }
    return points;
  }

  std::vector<size_t> axis_sizes_;
  Point start_;
  std::map<Point, std::optional<double>> costs_;
};

}  // namespace

std::unique_ptr<Strategy> MakeAdaptiveStrategy(std::vector<size_t> axis_sizes, Point start) {
  return std::make_unique<AdaptiveStrategy>(std::move(axis_sizes), std::move(start));
}

}  // namespace artune::tuner
