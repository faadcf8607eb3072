// Sweep strategies: how the points of a SearchSpace's grid are chosen. One small
// interface, one file per strategy (grid_strategy.cc, adaptive_strategy.cc), and a
// factory.
//
// A strategy minimises a cost: the caller turns its objective into a cost (a
// throughput is negated). It calls `evaluate` for each point it wants measured,
// never twice for the same point; `evaluate` returns the cost, std::nullopt for a
// point that cannot win (a failed or invalid trial), or an error Status that stops
// the search (returned by Search as it is).
//
// Determinism: a strategy's choices depend only on the axis sizes, the start point
// and the costs it is given, so a resumed sweep that answers the first points from
// the store walks the same path and measures only what is new.
//
// Threading: Search runs on the calling thread and calls `evaluate` there.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "artune/status.h"
#include "artune/tuner/search_space.h"

namespace artune::tuner {

using EvaluateFn = std::function<Result<std::optional<double>>(const Point& point)>;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;  // "grid" | "adaptive" | "ab"
  // How many points the search will likely measure (exact for grid; an estimate
  // for adaptive), for progress and ETA.
  virtual size_t EstimatedTrials() const = 0;
  // Runs the search. Errors: whatever `evaluate` returned.
  virtual Status Search(const EvaluateFn& evaluate) = 0;
};

// Every point, in row-major order (the last axis fastest).
std::unique_ptr<Strategy> MakeGridStrategy(std::vector<size_t> axis_sizes);

// A coarse lattice first (ends and middle of every axis, crossed, when that costs
// at most a tenth of the grid), then pattern (compass) search on the index lattice
// from the best point so far: poll +-step along every axis from
// the best point so far, move to the best improvement, halve the steps when none
// improves, stop when the step-1 poll (plus its diagonal neighbours) finds nothing
// better. `start` is the first point measured.
std::unique_ptr<Strategy> MakeAdaptiveStrategy(std::vector<size_t> axis_sizes, Point start);

// Two points: `start` (A) and, on every axis, the end opposite it (B: the last
// value where A has the first, else the first). Over axes of two values each, as
// `artune sweep --mpi --ab CONFIG` lays them (base value, CONFIG's value), B is
// CONFIG; the sweep's final round then compares A and B interleaved.
std::unique_ptr<Strategy> MakeAbStrategy(std::vector<size_t> axis_sizes, Point start);

// "grid" | "adaptive" | "ab"; kInvalidArgument naming the choices otherwise.
Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name,
                                               std::vector<size_t> axis_sizes, Point start);

}  // namespace artune::tuner
