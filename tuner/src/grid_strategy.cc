// The exhaustive grid: every point once, row-major.
#include "artune/tuner/strategy.h"

namespace artune::tuner {
namespace {

class GridStrategy final : public Strategy {
 public:
  explicit GridStrategy(std::vector<size_t> axis_sizes) : axis_sizes_(std::move(axis_sizes)) {}

  std::string_view name() const override { return "grid"; }

  size_t EstimatedTrials() const override {
    size_t total = axis_sizes_.empty() ? 0 : 1;
    for (size_t size : axis_sizes_) total *= size;
    return total;
  }

  Status Search(const EvaluateFn& evaluate) override {
    if (EstimatedTrials() == 0) return Status::Ok();
    Point point(axis_sizes_.size(), 0);
    while (true) {
      ARTUNE_RETURN_IF_ERROR(evaluate(point).status());
      // Odometer increment, last axis fastest.
      size_t axis = axis_sizes_.size();
      while (axis > 0) {
        --axis;
        if (++point[axis] < axis_sizes_[axis]) break;
        point[axis] = 0;
        if (axis == 0) return Status::Ok();
      }
    }
  }

 private:
  std::vector<size_t> axis_sizes_;
};

}  // namespace

std::unique_ptr<Strategy> MakeGridStrategy(std::vector<size_t> axis_sizes) {
  return std::make_unique<GridStrategy>(std::move(axis_sizes));
}

Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name,
                                               std::vector<size_t> axis_sizes, Point start) {
  if (name == "grid") return MakeGridStrategy(std::move(axis_sizes));
  if (name == "adaptive") return MakeAdaptiveStrategy(std::move(axis_sizes), std::move(start));
  if (name == "ab") return MakeAbStrategy(std::move(axis_sizes), std::move(start));
  return Status::InvalidArgument("strategy \"" + std::string(name) +
                                 "\" is not one of grid, adaptive, ab");
}

}  // namespace artune::tuner
