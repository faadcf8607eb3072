// The A/B "search": the start point (the base config, A) and the point opposite it
// on every axis (B). A cluster run's `--ab CONFIG` lays one two-value axis per knob
// CONFIG changes, so B is exactly CONFIG; the sweep's final round then measures A
// and B interleaved, and its verdict judges their same-round pairs.
#include "artune/tuner/strategy.h"

namespace artune::tuner {
namespace {

class AbStrategy final : public Strategy {
 public:
  AbStrategy(std::vector<size_t> axis_sizes, Point start)
      : axis_sizes_(std::move(axis_sizes)), start_(std::move(start)) {}

  std::string_view name() const override { return "ab"; }

  size_t EstimatedTrials() const override { return axis_sizes_.empty() ? 0 : 2; }

  Status Search(const EvaluateFn& evaluate) override {
    if (axis_sizes_.empty()) return Status::Ok();
    Point start = start_;
    start.resize(axis_sizes_.size(), 0);
    ARTUNE_RETURN_IF_ERROR(evaluate(start).status());
    // The last value of an axis where A has the first, else the first.
    Point other(axis_sizes_.size(), 0);
    for (size_t axis = 0; axis < axis_sizes_.size(); ++axis) {
      other[axis] = start[axis] == 0 ? axis_sizes_[axis] - 1 : 0;
    }
    if (other == start) return Status::Ok();  // every axis has one value: no B
    return evaluate(other).status();
  }

 private:
  std::vector<size_t> axis_sizes_;
  Point start_;
};

}  // namespace

std::unique_ptr<Strategy> MakeAbStrategy(std::vector<size_t> axis_sizes, Point start) {
  return std::make_unique<AbStrategy>(std::move(axis_sizes), std::move(start));
}

}  // namespace artune::tuner
