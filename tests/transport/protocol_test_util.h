// A config for the protocol tests (protocol_test.cc, protocol_ranges_test.cc): the
// size knobs that choose a slice's protocol, and the depth that pipelines chunks.
#pragma once

#include <cstdint>

#include "artune/transport/config.h"

namespace artune::transport {

inline Config MakeConfig(uint64_t eager_threshold, uint64_t chunk_size, uint64_t coalesce_limit,
                         uint32_t pipeline_depth = 4) {
  Config config;
  config.eager_threshold = eager_threshold;
  config.chunk_size = chunk_size;
  config.coalesce_limit = coalesce_limit;
  config.pipeline_depth = pipeline_depth;
  return config;
}

}  // namespace artune::transport
