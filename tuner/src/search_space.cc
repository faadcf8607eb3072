#include "artune/tuner/search_space.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "artune/base/text.h"

namespace artune::tuner {
namespace {

std::string UnknownKnobMessage(std::string_view name, std::string_view spec) {
  std::string message =
      "--knob " + std::string(spec) + ": no knob named \"" + std::string(name) + "\"";
  if (const transport::Knob* near = transport::NearestKnob(name)) {
    message += " (did you mean " + std::string(near->name) + "?)";
  }
  message += "; `artune config show` lists the knobs";
  return message;
}

Result<uint64_t> ParseValue(const transport::Knob& knob, std::string_view text,
                            std::string_view spec) {
  Result<uint64_t> value = transport::ParseKnobValue(knob, Trim(text));
  if (!value.ok()) {
    return Status::InvalidArgument("--knob " + std::string(spec) + ": " + value.status().message());
  }
  return *value;
}

Result<KnobAxis> ParseGeometric(const transport::Knob& knob, std::string_view body,
                                std::string_view spec) {
  const size_t dots = body.find("..");
  const size_t colon = body.rfind(':');
  const std::string form =
      std::string(knob.name) + "=LO..HI:xF (e.g. " + std::string(knob.name) + "=256B..256KiB:x2)";
  if (colon == std::string_view::npos || colon < dots) {
    return Status::InvalidArgument("--knob " + std::string(spec) +
                                   ": a range needs a growth factor: write " + form);
  }
  std::string_view factor_text = body.substr(colon + 1);
  uint64_t factor = 0;
  if (factor_text.size() < 2 || (factor_text[0] != 'x' && factor_text[0] != 'X') ||
      std::from_chars(factor_text.data() + 1, factor_text.data() + factor_text.size(), factor)
              .ptr != factor_text.data() + factor_text.size() ||
      factor < 2) {
    return Status::InvalidArgument(
        "--knob " + std::string(spec) + ": growth factor \"" + std::string(factor_text) +
        "\" is not x2, x4, ... (an integer of at least 2): write " + form);
  }
  if (knob.type == transport::KnobType::kEnum) {
    return Status::InvalidArgument("--knob " + std::string(spec) + ": " + std::string(knob.name) +
                                   " is a choice, not a number: list the choices, e.g. " +
                                   std::string(knob.name) + "=" +
                                   std::string(knob.choices.empty() ? "" : knob.choices[0]));
  }
  ARTUNE_ASSIGN_OR_RETURN(uint64_t low, ParseValue(knob, body.substr(0, dots), spec));
  ARTUNE_ASSIGN_OR_RETURN(uint64_t high,
                          ParseValue(knob, body.substr(dots + 2, colon - dots - 2), spec));
  if (low == 0) {
    return Status::InvalidArgument("--knob " + std::string(spec) +
                                   ": a geometric range cannot start at 0 (0 x " +
                                   std::to_string(factor) + " stays 0): start at 1 or list 0 " +
                                   "explicitly with NAME=0,1,2,...");
  }
  if (high < low) {
    return Status::InvalidArgument("--knob " + std::string(spec) + ": the range ends (" +
                                   transport::FormatKnobValue(knob, high) +
                                   ") below where it starts (" +
                                   transport::FormatKnobValue(knob, low) + "): swap LO and HI");
  }
  KnobAxis axis;
  axis.knob = &knob;
  uint64_t value = low;
  while (true) {
    axis.values.push_back(value);
    if (value > high / factor) break;
    value *= factor;
    if (value > high) break;
  }
  if (axis.values.back() != high) {
    const uint64_t below = axis.values.back();
    return Status::InvalidArgument(
        "--knob " + std::string(spec) + ": " + transport::FormatKnobValue(knob, high) +
        " is not on the ladder " + transport::FormatKnobValue(knob, low) + " x" +
        std::to_string(factor) + "^k; end the range at " + transport::FormatKnobValue(knob, below) +
        (below <= std::numeric_limits<uint64_t>::max() / factor && below * factor <= knob.max_value
             ? " or " + transport::FormatKnobValue(knob, below * factor)
             : std::string()));
  }
  axis.spec = std::string(knob.name) + "=" + transport::FormatKnobValue(knob, low) + ".." +
              transport::FormatKnobValue(knob, high) + ":x" + std::to_string(factor);
  return axis;
}

Result<KnobAxis> ParseList(const transport::Knob& knob, std::string_view body,
                           std::string_view spec) {
  KnobAxis axis;
  axis.knob = &knob;
  std::set<uint64_t> seen;
  for (const std::string& item : SplitComma(body)) {
    if (item.empty()) {
      return Status::InvalidArgument("--knob " + std::string(spec) +
                                     ": an empty value in the list: write " +
                                     std::string(knob.name) + "=a,b,c");
    }
    ARTUNE_ASSIGN_OR_RETURN(uint64_t value, ParseValue(knob, item, spec));
    if (!seen.insert(value).second) {
      return Status::InvalidArgument("--knob " + std::string(spec) + ": " +
                                     transport::FormatKnobValue(knob, value) +
                                     " is listed twice: list each value once");
    }
    axis.values.push_back(value);
  }
  std::sort(axis.values.begin(), axis.values.end());
  axis.spec = std::string(knob.name) + "=";
  for (size_t i = 0; i < axis.values.size(); ++i) {
    if (i > 0) axis.spec += ',';
    axis.spec += axis.ValueText(i);
  }
  return axis;
}

uint64_t AbsDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

size_t SearchSpace::GridSize() const {
  size_t size = axes.empty() ? 0 : 1;
  for (const KnobAxis& axis : axes) size *= axis.values.size();
  return size;
}

std::vector<size_t> SearchSpace::AxisSizes() const {
  std::vector<size_t> sizes;
  for (const KnobAxis& axis : axes) sizes.push_back(axis.values.size());
  return sizes;
}

std::string SearchSpace::Canonical() const {
  std::string text;
  for (const KnobAxis& axis : axes) {
    if (!text.empty()) text += ' ';
    text += axis.spec;
  }
  return text;
}

std::map<std::string, std::string> SearchSpace::KnobValues(const Point& point) const {
  std::map<std::string, std::string> values;
  for (size_t i = 0; i < axes.size(); ++i) {
    values.emplace(std::string(axes[i].name()), axes[i].ValueText(point[i]));
  }
  return values;
}

transport::Config SearchSpace::Apply(const Point& point, transport::Config base) const {
  for (size_t i = 0; i < axes.size(); ++i) axes[i].knob->set(base, axes[i].values[point[i]]);
  return base;
}

Point SearchSpace::Nearest(const transport::Config& config) const {
  Point point;
  for (const KnobAxis& axis : axes) {
    const uint64_t target = axis.knob->get(config);
    size_t best = 0;
    double best_distance = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < axis.values.size(); ++i) {
      // Log distance for positive values (the axes are mostly geometric); plain
      // distance when a zero is involved.
      const double distance = (target > 0 && axis.values[i] > 0)
                                  ? std::fabs(std::log2(static_cast<double>(axis.values[i])) -
                                              std::log2(static_cast<double>(target)))
                                  : static_cast<double>(AbsDiff(axis.values[i], target));
      if (distance < best_distance) {
        best_distance = distance;
        best = i;
      }
    }
    point.push_back(best);
  }
  return point;
}

int SearchSpace::AxisIndex(std::string_view name) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].name() == name) return static_cast<int>(i);
  }
  return -1;
}

Result<KnobAxis> ParseKnobAxis(std::string_view spec) {
  const size_t equals = spec.find('=');
  if (equals == std::string_view::npos) {
    return Status::InvalidArgument(
        "--knob " + std::string(spec) +
        ": expected NAME=LO..HI:xF or NAME=a,b,c (e.g. eager_threshold=256B..256KiB:x2)");
  }
  const std::string name(Trim(spec.substr(0, equals)));
  const transport::Knob* knob = transport::FindKnob(name);
  if (knob == nullptr) return Status::InvalidArgument(UnknownKnobMessage(name, spec));
  // Trials reconfigure both ends live; a knob fixed when a transport starts would
  // keep its starting value in every trial, which would then measure one config
  // under several labels.
  if (!knob->live) {
    return Status::InvalidArgument(
        "--knob " + std::string(spec) + ": " + name +
        " is set when a transport starts and cannot change between trials (they "
        "reconfigure both ends live); " +
        (name == "fabric"
             ? "use --fabric to choose it for the whole sweep"
             : "set it for the whole sweep with --set " + name + "=VALUE, one sweep per value"));
  }
  const std::string_view body = spec.substr(equals + 1);
  if (Trim(body).empty()) {
    return Status::InvalidArgument("--knob " + std::string(spec) + ": no values for " + name +
                                   " (allowed " + transport::FormatKnobRange(*knob) + "): write " +
                                   name + "=LO..HI:xF or " + name + "=a,b,c");
  }
  if (body.find("..") != std::string_view::npos) return ParseGeometric(*knob, body, spec);
  return ParseList(*knob, body, spec);
}

Result<SearchSpace> ParseSearchSpace(std::span<const std::string> specs) {
  if (specs.empty()) return DefaultSearchSpace();
  SearchSpace space;
  for (const std::string& spec : specs) {
    ARTUNE_ASSIGN_OR_RETURN(KnobAxis axis, ParseKnobAxis(spec));
    if (space.AxisIndex(axis.name()) >= 0) {
      return Status::InvalidArgument("--knob " + spec + ": " + std::string(axis.name()) +
                                     " is swept twice: give one --knob per knob");
    }
    space.axes.push_back(std::move(axis));
  }
  if (space.GridSize() > kMaxGridPoints) {
    return Status::InvalidArgument("the search space has " + std::to_string(space.GridSize()) +
                                   " points (" + space.Canonical() + "), more than " +
                                   std::to_string(kMaxGridPoints) +
                                   ": use a coarser factor (x4) or fewer values");
  }
  return space;
}

SearchSpace DefaultSearchSpace() {
  SearchSpace space;
  for (const char* spec : {"eager_threshold=256B..256KiB:x2", "chunk_size=16KiB..4MiB:x2"}) {
    Result<KnobAxis> axis = ParseKnobAxis(spec);
    // The knob table's ranges contain these (a transport test would fail first).
    if (axis.ok()) space.axes.push_back(std::move(*axis));
  }
  return space;
}

}  // namespace artune::tuner
