// The sweep's search space: one axis per swept knob of the transport's knob table
// (transport/knobs.h), the grid being the cross product of the axes.
//
// Axis syntax (`artune sweep --knob`):
//   NAME=LO..HI:xF   geometric: LO, LO*F, LO*F^2, ... up to HI inclusive (F >= 2,
//                    HI must be on that ladder: the error names the nearest ones)
//   NAME=a,b,c       a list of values
// Values use the knob's own syntax (ParseKnobValue): sizes with units (256B, 16KiB,
// 4MiB), counts, milliseconds, enum names. Every value is range-checked against the
// knob table; errors (kInvalidArgument) name the knob, the value, the allowed range
// and the fix. Values of an axis are sorted ascending and must be distinct.
//
// Threading: plain values, immutable after parsing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/transport/knobs.h"

namespace artune::tuner {

// A grid point: one index per axis, into that axis's values.
using Point = std::vector<size_t>;

struct KnobAxis {
  const transport::Knob* knob = nullptr;  // a row of the knob table (static lifetime)
  std::vector<uint64_t> values;           // ascending, distinct
  std::string spec;                       // canonical text, e.g. "chunk_size=16KiB..4MiB:x2"

  std::string_view name() const { return knob->name; }
  std::string ValueText(size_t index) const {
    return transport::FormatKnobValue(*knob, values[index]);
  }
};

// A grid larger than this is refused: at a second per trial it would take hours.
inline constexpr size_t kMaxGridPoints = 4096;

struct SearchSpace {
  std::vector<KnobAxis> axes;  // in the order given; at least one

  // Points in the grid (product of the axis sizes).
  size_t GridSize() const;
  std::vector<size_t> AxisSizes() const;
  // The canonical specs of every axis joined by ' ' (stored with the sweep).
  std::string Canonical() const;
  // {knob name: FormatKnobValue text} for a point (the store's trial knobs).
  std::map<std::string, std::string> KnobValues(const Point& point) const;
  // `base` with the point's values set.
  transport::Config Apply(const Point& point, transport::Config base) const;
  // The point whose values are nearest (in log2 distance, per axis) to `config`'s.
  Point Nearest(const transport::Config& config) const;
  // The index of the axis named `name`, or -1.
  int AxisIndex(std::string_view name) const;
};

// One --knob argument. Knobs fixed when a transport starts (Knob::live false: the
// fabric, idle_timeout_ms, the verbs_* knobs) are refused with the reason: trials
// reconfigure live.
Result<KnobAxis> ParseKnobAxis(std::string_view spec);

// The axes of every --knob argument; none gives DefaultSearchSpace(). A knob named
// twice, or a grid past kMaxGridPoints, is kInvalidArgument.
Result<SearchSpace> ParseSearchSpace(std::span<const std::string> specs);

// eager_threshold 256B..256KiB:x2 (11 values) x chunk_size 16KiB..4MiB:x2 (9 values):
// brackets the usual eager/rendezvous crossovers and chunk sizes of RDMA stacks.
SearchSpace DefaultSearchSpace();

}  // namespace artune::tuner
