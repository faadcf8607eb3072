// Shared by the tests that predict over a link model whose costs are known by hand
// (tests/cluster, tests/watch): one protocol's measured curve, made up.
#pragma once

#include <cstdint>
#include <vector>

#include "artune/model/link_model.h"

namespace artune::model {

// Where a synthetic curve is measured: sizes from `first` to 8 MiB (x4), at each
// count of calls in flight, `rounds` behind every point; chunk and depth for
// chunked-rendezvous only.
struct SyntheticCurve {
  uint64_t chunk = 0, first = 64;
  uint32_t depth = 0, rounds = 1;
  std::vector<uint32_t> inflights = {1};
};

// Points of time = fixed + size / bandwidth, whatever the calls in flight, with no
// spread between the rounds (adaptive polling).
inline void AddSyntheticCurve(LinkModel& model, transport::Protocol protocol, double fixed_s,
                              double bytes_per_s, const SyntheticCurve& curve = {}) {
  for (uint64_t size = curve.first; size <= (8u << 20); size *= 4) {
    for (uint32_t inflight : curve.inflights) {
      ModelPoint point;
      point.protocol = protocol;
      point.polling = transport::PollingMode::kAdaptive;
      point.chunk_size = curve.chunk;
      point.pipeline_depth = curve.depth;
      point.size = size;
      point.inflight = inflight;
      point.median_s = point.low_s = point.high_s =
          fixed_s + static_cast<double>(size) / bytes_per_s;
      point.rounds = curve.rounds;
      model.points.push_back(point);
    }
  }
}

}  // namespace artune::model
