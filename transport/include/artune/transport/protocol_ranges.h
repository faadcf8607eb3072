// Which protocol serves which slice sizes under a config, and what one slice of a
// given size becomes: `artune config explain`'s tables, derived from protocol.h's
// selection (the same code the engine runs), so what is explained is what happens.
// Pure functions of a Config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "artune/transport/config.h"
#include "artune/transport/protocol.h"

namespace artune::transport {

// One size range served by one protocol.
struct ProtocolRange {
  Protocol protocol;
  uint64_t min_bytes;
  std::optional<uint64_t> max_bytes;  // nullopt: unbounded
  std::string how;                    // one line on how the bytes travel
};

// The ranges in order: eager, coalesced eager (when coalesce_limit > 0; overlaps
// eager), rendezvous read (when a chunk is larger than the eager threshold),
// chunked rendezvous.
std::vector<ProtocolRange> ProtocolRanges(const Config& config);

// "0 .. 16KiB", "> 16KiB .. 512KiB", "> 512KiB": bounds in the units the knobs use.
std::string FormatProtocolRange(const ProtocolRange& range);

// What one slice of `bytes` becomes on its own.
struct SliceExample {
  uint64_t bytes;
  Protocol protocol;
  size_t chunks;    // rendezvous reads (0 for eager)
  uint64_t rounds;  // chunk batches of pipeline_depth reads (0 for eager)
};
SliceExample ExplainSlice(uint64_t bytes, const Config& config);

// Sizes worth explaining, sorted and distinct: the TF-gRPC-Bench class defaults
// (10 B, 10 KiB, 1 MiB), the Large class bound (10 MiB) and the knobs' own
// boundaries (eager_threshold and chunk_size, and one byte past each).
std::vector<uint64_t> ExampleSliceSizes(const Config& config);

}  // namespace artune::transport
