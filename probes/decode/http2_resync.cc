// Resynchronisation: after a join midway, a gap or an impossible frame header,
// bytes are buffered (bounded) and scanned for a chain of plausible frame headers
// (rule in probes/README.md).
#include "decoder_impl.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace artune::probes {

using namespace decode_detail;  // NOLINT: the decoder's own internal types

void Http2ConnectionDecoder::Impl::EnterResync(Side& side) {
  side.position_exact = false;
  side.phase = Phase::kResync;
  side.resync.clear();
  side.resync_scan_from = 0;
  side.resync_scanned_size = 0;
  side.header_have = 0;
  if (side.header_block_open) {
    LoseHpack(side);
  }
  // Message boundaries on this side are lost for every open stream.
  for (auto& [id, stream] : streams) {
    GrpcFramer& framer = stream.framer[side.index];
    if (framer.InMessage()) errors.Add(DecodeError::kTruncatedMessage);
    framer.Reset();
    framer.synced = false;
  }
}

long Http2ConnectionDecoder::Impl::FindResyncPoint(Side& side, bool buffer_full) {
  const std::vector<uint8_t>& buffer = side.resync;
  long undecided = -1;
  long full_candidate = -1;
  for (size_t start = side.resync_scan_from; start + kFrameHeaderSize <= buffer.size(); ++start) {
    size_t offset = start;
    size_t chained = 0;
    bool ran_out = false;
    bool broken = false;
    while (chained < limits.resync_chain_frames) {
      if (offset + kFrameHeaderSize > buffer.size()) {
        ran_out = true;
        break;
      }
      const FrameHeader header = ParseFrameHeader(buffer.data() + offset);
      if (!FrameHeaderIsPlausible(header, limits.resync_max_frame_length) ||
          (chained == 0 && header.type == kFrameContinuation)) {
        broken = true;
        break;
      }
      ++chained;
      offset += kFrameHeaderSize + header.length;
    }
    if (chained >= limits.resync_chain_frames) return static_cast<long>(start);
    if (broken) continue;
    // Undecided (the chain runs past the buffered bytes): remember it, but keep
    // looking, since a later confirmed chain wins over an unconfirmed one (bytes of
    // a preface or payload often look like the header of a long frame).
    if (ran_out) {
      if (undecided < 0) undecided = static_cast<long>(start);
      if (buffer_full && chained >= 2 && full_candidate < 0) {
        full_candidate = static_cast<long>(start);
      }
    }
  }
  // A full buffer cannot grow: accept a chain of two if there is one.
  if (full_candidate >= 0) return full_candidate;
  side.resync_scan_from =
      undecided >= 0
          ? static_cast<size_t>(undecided)
          : (buffer.size() >= kFrameHeaderSize ? buffer.size() - kFrameHeaderSize + 1 : 0);
  return -1;
}

void Http2ConnectionDecoder::Impl::FeedResync(Side& side, const uint8_t* data, size_t size) {
  while (size > 0) {
    const size_t room = limits.resync_buffer_bytes - side.resync.size();
    const size_t take = std::min(room, size);
    side.resync.insert(side.resync.end(), data, data + take);
    data += take;
    size -= take;
    const bool full = side.resync.size() >= limits.resync_buffer_bytes;
    // Rescanning costs O(buffer): with tiny segments, scan only every
    // kResyncScanStep new bytes (and when full, and at the end of the stream).
    if (!full && side.resync.size() - side.resync_scanned_size < kResyncScanStep) continue;
    side.resync_scanned_size = side.resync.size();
    const long point = FindResyncPoint(side, full);
    if (point >= 0) {
      if (point > 0) {
        errors.Add(DecodeError::kResyncDiscard);
        stats.discarded_bytes += static_cast<uint64_t>(point);
      }
      side.replay.assign(side.resync.begin() + point, side.resync.end());
      side.replay.insert(side.replay.end(), data, data + size);
      side.resync.clear();
      side.resync.shrink_to_fit();
      side.resync_scan_from = 0;
      side.resync_scanned_size = 0;
      side.phase = Phase::kFrameHeader;
      return;
    }
    if (full) {
      // Nothing confirmed in a full buffer: keep only the undecided tail (where a
      // header chain may still start), or drop one byte if the candidate spans it all.
      size_t drop = side.resync_scan_from;
      if (drop == 0) drop = 1;
      errors.Add(DecodeError::kResyncDiscard);
      stats.discarded_bytes += drop;
      side.resync.erase(side.resync.begin(), side.resync.begin() + static_cast<long>(drop));
      side.resync_scan_from = 0;
      side.resync_scanned_size = 0;
    }
  }
}

}  // namespace artune::probes
