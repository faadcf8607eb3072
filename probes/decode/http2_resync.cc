// Resynchronisation: after a join midway, a gap or an impossible frame header,
// bytes are buffered (bounded) and scanned for a chain of plausible frame headers
// (rule in probes/README.md).
#include "decoder_impl.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace artune::probes {

using namespace decode_detail;  // NOLINT: the decoder's own internal types

void Http2ConnectionDecoder::Impl::EnterResync(Side& side) {
  side.position_exact = false;
  side.phase = Phase::kResync;
  ResetResync(side);
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

void decode_detail::ResetResync(Side& side) {
  side.resync.clear();
  side.resync.shrink_to_fit();
  side.resync_scan = ResyncScan{};
  side.resync_scanned_size = 0;
}

size_t decode_detail::ResyncBytes(const Side& side) {
  return side.resync.size() - side.resync_scan.front;
}

namespace {

// How many of the `positions` header starts from `at` have a type byte (at + 3)
// that is no frame type (> CONTINUATION), before the first one that may be. 16
// positions a step with SSE2 (every x86-64 has it); on random bytes 10 values in
// 256 pass, so most steps skip all 16.
size_t PositionsWithoutFrameType(const uint8_t* at, size_t positions) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i max_type = _mm_set1_epi8(static_cast<char>(kFrameContinuation));
  for (; i + 16 <= positions; i += 16) {
    const __m128i types = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + i + 3));
    // Unsigned type <= 9 exactly when min(type, 9) == type.
    const int may_be = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(types, max_type), types));
    if (may_be != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(may_be)));
  }
#endif
  for (; i < positions; ++i) {
    if (at[i + 3] <= kFrameContinuation) return i;
  }
  return positions;
}

}  // namespace

// Every position is tried as a chain start once; a chain is followed header by
// header as bytes arrive, never from its start again, and is dropped as soon as a
// header is implausible or it could not fit in a full buffer. So the work is
// linear in the bytes (times log of the chains waiting), where rescanning the
// buffer on every arrival was quadratic on bytes that are not HTTP/2.
long Http2ConnectionDecoder::Impl::FindResyncPoint(Side& side, bool buffer_full) {
  ResyncScan& scan = side.resync_scan;
  const std::vector<uint8_t>& buffer = side.resync;
  const uint64_t end = scan.base + buffer.size();
  const uint64_t capacity = limits.resync_buffer_bytes;
  uint64_t confirmed = UINT64_MAX;

  // Follows `chain` from the header at its offset as far as the buffer goes.
  const auto follow = [&](ResyncScan::Chain chain) {
    while (chain.offset + kFrameHeaderSize <= end) {
      const FrameHeader header = ParseFrameHeader(buffer.data() + (chain.offset - scan.base));
      ++stats.resync_headers_examined;
      if (!FrameHeaderIsPlausible(header, limits.resync_max_frame_length) ||
          (chain.headers == 0 && header.type == kFrameContinuation)) {
        return;  // broken: never looked at again
      }
      ++chain.headers;
      if (chain.headers >= limits.resync_chain_frames) {
        confirmed = std::min(confirmed, chain.start);
        return;
      }
      chain.offset += kFrameHeaderSize + header.length;
    }
    // A chain whose next header lies beyond what a full buffer could hold from its
    // start can never be confirmed.
    if (chain.offset + kFrameHeaderSize - chain.start > capacity) return;
    scan.starts.insert(chain.start);
    if (chain.headers >= 2) scan.starts_of_two.insert(chain.start);
    scan.waiting.push(chain);
  };

  // Chains waiting for bytes that have now arrived.
  while (!scan.waiting.empty() && scan.waiting.top().offset + kFrameHeaderSize <= end) {
    ResyncScan::Chain chain = scan.waiting.top();
    scan.waiting.pop();
    scan.starts.erase(scan.starts.find(chain.start));
    if (chain.headers >= 2) scan.starts_of_two.erase(scan.starts_of_two.find(chain.start));
    follow(chain);
  }
  // New starts. Most positions of bytes that are not HTTP/2 fail on the type byte
  // (10 of 256 values are frame types) or the reserved bit, checked here before a
  // header is parsed: the same verdict FrameHeaderIsPlausible would give, for a
  // fraction of the work per byte.
  scan.next_start = std::max(scan.next_start, scan.base + scan.front);
  const uint8_t* bytes = buffer.data();
  while (scan.next_start + kFrameHeaderSize <= end) {
    const uint8_t* at = bytes + (scan.next_start - scan.base);
    const size_t positions = static_cast<size_t>(end - scan.next_start) - kFrameHeaderSize + 1;
    const size_t skip = PositionsWithoutFrameType(at, positions);
    scan.next_start += skip;
    if (skip == positions) break;
    at += skip;
    if ((at[5] & 0x80) == 0) follow({scan.next_start, scan.next_start, 0});
    ++scan.next_start;
  }
  if (confirmed != UINT64_MAX) return static_cast<long>(confirmed - scan.base);
  // A full buffer cannot grow: accept a chain of two if there is one.
  if (buffer_full && !scan.starts_of_two.empty()) {
    return static_cast<long>(*scan.starts_of_two.begin() - scan.base);
  }
  return -1;
}

void Http2ConnectionDecoder::Impl::FeedResync(Side& side, const uint8_t* data, size_t size) {
  while (size > 0) {
    const size_t room = limits.resync_buffer_bytes - ResyncBytes(side);
    const size_t take = std::min(room, size);
    side.resync.insert(side.resync.end(), data, data + take);
    data += take;
    size -= take;
    const bool full = ResyncBytes(side) >= limits.resync_buffer_bytes;
    // Scan every kResyncScanStep new bytes (and when full, and at the end of the
    // stream): a scan has a fixed cost besides the new bytes.
    if (!full && side.resync.size() - side.resync_scanned_size < kResyncScanStep) continue;
    const long point = FindResyncPoint(side, full);
    side.resync_scanned_size = side.resync.size();
    if (point >= 0) {
      const size_t skipped = static_cast<size_t>(point) - side.resync_scan.front;
      if (skipped > 0) {
        errors.Add(DecodeError::kResyncDiscard);
        stats.discarded_bytes += skipped;
      }
      side.replay.assign(side.resync.begin() + point, side.resync.end());
      side.replay.insert(side.replay.end(), data, data + size);
      ResetResync(side);
      side.phase = Phase::kFrameHeader;
      return;
    }
    if (full) {
      // Nothing confirmed in a full buffer: keep from the first chain still
      // waiting (it fits, so it starts after the front), or the last bytes where a
      // header may begin.
      ResyncScan& scan = side.resync_scan;
      const uint64_t live = scan.base + scan.front;
      const uint64_t keep_from = scan.starts.empty()
                                     ? scan.base + side.resync.size() - (kFrameHeaderSize - 1)
                                     : *scan.starts.begin();
      const size_t drop = static_cast<size_t>(std::max<uint64_t>(1, keep_from - live));
      errors.Add(DecodeError::kResyncDiscard);
      stats.discarded_bytes += drop;
      scan.front += drop;
      // Erase the discarded front once it is half the buffer: each byte moves at
      // most once per halving, so dropping stays linear however small the drops.
      if (scan.front >= side.resync.size() / 2) {
        side.resync.erase(side.resync.begin(), side.resync.begin() + static_cast<long>(scan.front));
        scan.base += scan.front;
        scan.front = 0;
      }
      side.resync_scanned_size = side.resync.size();
    }
  }
}

}  // namespace artune::probes
