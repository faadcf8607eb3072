#include "artune/transport/protocol_ranges.h"

#include <algorithm>

#include "artune/transport/knobs.h"

namespace artune::transport {

std::vector<ProtocolRange> ProtocolRanges(const Config& config) {
  std::vector<ProtocolRange> rows;
  const uint64_t eager_max = config.eager_threshold;
  rows.push_back({Protocol::kEager, 0, eager_max,
                  "copied into one of " + std::to_string(config.eager_buffer_count) + " " +
                      FormatBytes(EagerBufferBytes(config)) +
                      " registered eager buffers, two-sided send"});
  const uint64_t coalescible_max = std::min(config.eager_threshold, config.coalesce_limit);
  if (config.coalesce_limit > 0) {
    rows.push_back({Protocol::kCoalescedEager, 0, coalescible_max,
                    "neighbouring eager slices share one packet while it holds at most " +
                        FormatBytes(config.coalesce_limit) + " (and " +
                        std::to_string(kMaxSlicesPerEagerPacket) + " slices)"});
  }
  if (config.chunk_size > config.eager_threshold) {
    rows.push_back({Protocol::kRendezvousRead, eager_max + 1, config.chunk_size,
                    "receiver reads the sender's registered buffer in one read, then FIN"});
  }
  const uint64_t chunked_min = std::max(config.eager_threshold, config.chunk_size) + 1;
  rows.push_back({Protocol::kChunkedRendezvous, chunked_min, std::nullopt,
                  FormatBytes(config.chunk_size) + " chunks, " +
                      std::to_string(config.pipeline_depth) + " reads in flight"});
  return rows;
}

std::string FormatProtocolRange(const ProtocolRange& range) {
  const std::string low = range.min_bytes == 0 ? "0" : "> " + FormatBytes(range.min_bytes - 1);
  if (!range.max_bytes) return low;
  return low + " .. " + FormatBytes(*range.max_bytes);
}

SliceExample ExplainSlice(uint64_t bytes, const Config& config) {
  SliceExample example{bytes, ChooseSliceProtocol(bytes, config), 0, 0};
  if (example.protocol == Protocol::kRendezvousRead) example.chunks = 1;
  if (example.protocol == Protocol::kChunkedRendezvous) {
    example.chunks = ChunkRanges(bytes, config.chunk_size).size();
  }
  if (example.chunks > 0) {
    example.rounds = (example.chunks + config.pipeline_depth - 1) / config.pipeline_depth;
  }
  return example;
}

std::vector<uint64_t> ExampleSliceSizes(const Config& config) {
  std::vector<uint64_t> sizes = {10,
                                 10 * 1024,
                                 1 << 20,
                                 10 << 20,
                                 config.eager_threshold,
                                 config.eager_threshold + 1,
                                 config.chunk_size,
                                 config.chunk_size + 1};
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace artune::transport
