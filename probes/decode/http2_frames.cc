// The frame layer of the HTTP/2 decoder: a byte-at-a-time state machine over
// spans (no frame is buffered whole), frame spans for iovec attribution, and the
// hold that keeps a server side behind its requests.
#include "decoder_impl.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace artune::probes {

using namespace decode_detail;  // NOLINT: the decoder's own internal types

void Http2ConnectionDecoder::Impl::BeginFrame(Side& side) {
  side.frame = ParseFrameHeader(side.header_bytes);
  side.header_have = 0;
  side.payload_left = side.frame.length;
  side.frame_bad = false;
  side.control_have = 0;
  side.pad_length = 0;
  side.block_final_fed = false;
  ++stats.frames;
  const FrameHeader& f = side.frame;

  if (!FrameHeaderIsValid(f)) {
    errors.Add(DecodeError::kInvalidFrameHeader);
    EnterResync(side);
    return;
  }
  if (side.header_block_open &&
      (f.type != kFrameContinuation || f.stream_id != side.header_block_stream)) {
    errors.Add(DecodeError::kContinuationMismatch);
    LoseHpack(side);
  }
  if (f.type == kFrameContinuation && !side.header_block_open) {
    errors.Add(DecodeError::kContinuationMismatch);
    side.frame_bad = true;
  }

  const bool padded =
      (f.flags & kFlagPadded) != 0 &&
      (f.type == kFrameData || f.type == kFrameHeaders || f.type == kFramePushPromise);
  side.part = padded ? PayloadPart::kPadLength : PayloadPart::kBody;
  if (!padded) AfterPadLength(side);

  switch (f.type) {
    case kFrameData: {
      ++stats.data_frames;
      highest_stream_id = std::max(highest_stream_id, f.stream_id);
      StreamState* stream = FindOrCreateStream(f.stream_id);
      if (stream != nullptr && !stream->headers_seen[side.index] &&
          !stream->counted_midway[side.index]) {
        stream->counted_midway[side.index] = true;
        errors.Add(DecodeError::kStreamJoinedMidway);
      }
      break;
    }
    case kFrameHeaders: {
      side.highest_headers_stream = std::max(side.highest_headers_stream, f.stream_id);
      if (f.stream_id > highest_stream_id) {
        highest_stream_id = f.stream_id;
        ++stream_opens[side.index];
      }
      side.header_block_open = (f.flags & kFlagEndHeaders) == 0;
      side.header_block_stream = f.stream_id;
      side.header_block_failed = false;
      StreamState* stream = FindOrCreateStream(f.stream_id);
      if (stream != nullptr && !stream->headers_seen[side.index]) {
        // The first HEADERS of a side starts its message stream at a boundary;
        // later ones are trailers.
        stream->headers_seen[side.index] = true;
        stream->framer[side.index].synced = true;
      }
      break;
    }
    case kFramePushPromise:
      errors.Add(DecodeError::kPushPromiseUnsupported);
      LoseHpack(side);
      side.frame_bad = true;
      break;
    case kFrameContinuation:
      side.header_block_open = (f.flags & kFlagEndHeaders) == 0;
      break;
    default:
      break;
  }
  if (side.payload_left == 0) EndFrame(side);
}

void Http2ConnectionDecoder::Impl::AfterPadLength(Side& side) {
  const FrameHeader& f = side.frame;
  if (f.type == kFrameHeaders && (f.flags & kFlagPriority) != 0) {
    side.part = PayloadPart::kPriority;
    side.part_left = 5;
  } else {
    side.part = PayloadPart::kBody;
  }
}

uint32_t Http2ConnectionDecoder::Impl::BodyLeft(const Side& side) const {
  return side.payload_left > side.pad_length ? side.payload_left - side.pad_length : 0;
}

void Http2ConnectionDecoder::Impl::ReportFrame(const Side& side, uint64_t begin, uint64_t end,
                                               uint32_t stream_id) {
  if (!side.position_exact) return;
  FrameSpan span;
  span.connection_id = connection_id;
  span.side = side.index;
  span.begin = begin;
  span.end = end;
  span.stream_id = stream_id;
  span.direction = DirectionOf(side.index);
  if (stream_id != 0) {
    auto it = streams.find(stream_id);
    if (it != streams.end()) span.method = it->second.method;
  }
  observer.OnFrame(span);
}

void Http2ConnectionDecoder::Impl::EndFrame(Side& side) {
  const FrameHeader& f = side.frame;
  side.phase = Phase::kFrameHeader;
  // Before the stream may be retired below (END_STREAM), while its method is known.
  ReportFrame(side, side.frame_begin, side.frame_begin + kFrameHeaderSize + f.length, f.stream_id);
  if (side.frame_bad) return;
  switch (f.type) {
    case kFrameData:
      if ((f.flags & kFlagEndStream) != 0) EndStreamSide(side, f.stream_id);
      break;
    case kFrameHeaders:
    case kFrameContinuation:
      if ((f.flags & kFlagEndHeaders) != 0 && !side.block_final_fed) {
        // END_HEADERS with an empty last fragment: finish the block here.
        FeedHeaderBlock(side, nullptr, 0, /*final=*/true);
      }
      if (f.type == kFrameHeaders && (f.flags & kFlagEndStream) != 0) {
        if (side.header_block_open) {
          side.pending_end_stream = f.stream_id;
        } else {
          EndStreamSide(side, f.stream_id);
        }
      } else if (f.type == kFrameContinuation && !side.header_block_open &&
                 side.pending_end_stream == f.stream_id && f.stream_id != 0) {
        side.pending_end_stream = 0;
        EndStreamSide(side, f.stream_id);
      }
      break;
    case kFrameRstStream: {
      auto it = streams.find(f.stream_id);
      if (it != streams.end()) {
        for (int i = 0; i < 2; ++i) {
          GrpcFramer& framer = it->second.framer[i];
          if (framer.synced && framer.InMessage()) errors.Add(DecodeError::kTruncatedMessage);
        }
        FinishCall(f.stream_id, it->second, CallEndReason::kReset);
        streams.erase(it);
      }
      break;
    }
    default:
      break;  // SETTINGS, PING, GOAWAY, WINDOW_UPDATE, PRIORITY, unknown: nothing to keep
  }
}

size_t Http2ConnectionDecoder::Impl::ConsumePayload(Side& side, const uint8_t* data, size_t size) {
  const FrameHeader& f = side.frame;
  size_t used = 0;
  while (used < size && side.payload_left > 0) {
    const size_t available = size - used;
    if (side.frame_bad) {
      const size_t take = std::min<size_t>(available, side.payload_left);
      used += take;
      side.payload_left -= static_cast<uint32_t>(take);
      continue;
    }
    switch (side.part) {
      case PayloadPart::kPadLength:
        side.pad_length = data[used++];
        --side.payload_left;
        if (side.pad_length > side.payload_left) {
          errors.Add(DecodeError::kBadPadding);
          side.frame_bad = true;
          if (f.type == kFrameHeaders) LoseHpack(side);
        } else {
          AfterPadLength(side);
        }
        break;
      case PayloadPart::kPriority:
      case PayloadPart::kPromisedId: {
        const size_t take = std::min<size_t>({available, side.part_left, side.payload_left});
        used += take;
        side.payload_left -= static_cast<uint32_t>(take);
        side.part_left -= static_cast<uint32_t>(take);
        if (side.part_left == 0) side.part = PayloadPart::kBody;
        if (side.pad_length > side.payload_left) {
          errors.Add(DecodeError::kBadPadding);
          side.frame_bad = true;
          LoseHpack(side);
        }
        break;
      }
      case PayloadPart::kBody: {
        const size_t take = std::min<size_t>(available, BodyLeft(side));
        const uint8_t* body = data + used;
        used += take;
        side.payload_left -= static_cast<uint32_t>(take);
        const bool body_done = BodyLeft(side) == 0;
        if (f.type == kFrameData) {
          stats.data_bytes += take;
          auto it = streams.find(f.stream_id);
          FeedGrpc(side, f.stream_id, it == streams.end() ? nullptr : &it->second, body, take);
        } else if (f.type == kFrameHeaders || f.type == kFrameContinuation) {
          const bool final = body_done && (f.flags & kFlagEndHeaders) != 0;
          if (take > 0 || final) FeedHeaderBlock(side, body, take, final);
          if (final) side.block_final_fed = true;
        } else if (side.control_have < kControlPayloadKept) {
          const size_t keep = std::min(take, kControlPayloadKept - side.control_have);
          std::memcpy(side.control + side.control_have, body, keep);
          side.control_have += keep;
        }
        if (body_done) side.part = PayloadPart::kPadding;
        break;
      }
      case PayloadPart::kPadding: {
        const size_t take = std::min<size_t>(available, side.payload_left);
        used += take;
        side.payload_left -= static_cast<uint32_t>(take);
        break;
      }
    }
  }
  return used;
}

void Http2ConnectionDecoder::Impl::FeedFrames(Side& side, const uint8_t* data, size_t size) {
  while (size > 0) {
    if (side.phase == Phase::kResync) {
      FeedResync(side, data, size);
      return;  // all taken: buffered, or moved to side.replay
    }
    if (side.phase == Phase::kPreface) {
      if (side.preface_matched == 0 && data[0] != static_cast<uint8_t>(kClientPreface[0])) {
        side.phase = Phase::kFrameHeader;  // the server side starts with SETTINGS
        side.expect_settings = true;
        continue;
      }
      const size_t take = std::min(size, kClientPreface.size() - side.preface_matched);
      if (std::memcmp(data, kClientPreface.data() + side.preface_matched, take) != 0) {
        errors.Add(DecodeError::kNotHttp2);
        LoseHpack(side);
        EnterResync(side);
        continue;
      }
      side.preface_matched += take;
      side.position += take;
      data += take;
      size -= take;
      if (side.preface_matched == kClientPreface.size()) {
        ReportFrame(side, side.position - kClientPreface.size(), side.position, 0);
        stats.client_side = side.index;
        side.phase = Phase::kFrameHeader;
        side.expect_settings = true;
      }
      continue;
    }
    if (side.phase == Phase::kFrameHeader) {
      if (side.header_have == 0) side.frame_begin = side.position;
      const size_t take = std::min(size, kFrameHeaderSize - side.header_have);
      std::memcpy(side.header_bytes + side.header_have, data, take);
      side.header_have += take;
      side.position += take;
      data += take;
      size -= take;
      if (side.header_have < kFrameHeaderSize) return;
      if (side.expect_settings) {
        // A fresh connection's first frame on each side is SETTINGS: anything else
        // means this is not HTTP/2 at all (HTTP/1.1, TLS, ...).
        side.expect_settings = false;
        const FrameHeader first = ParseFrameHeader(side.header_bytes);
        if (first.type != kFrameSettings || !FrameHeaderIsValid(first)) {
          errors.Add(DecodeError::kNotHttp2);
          uint8_t first_bytes[kFrameHeaderSize];
          std::memcpy(first_bytes, side.header_bytes, kFrameHeaderSize);
          EnterResync(side);
          LoseHpack(side);
          FeedResync(side, first_bytes, kFrameHeaderSize);
          if (!side.replay.empty()) {
            side.replay.insert(side.replay.end(), data, data + size);
            return;
          }
          continue;
        }
      }
      if (MustWaitForRequest(side)) {
        side.holding = true;
        side.held_for_stream = ParseFrameHeader(side.header_bytes).stream_id;
        side.held.assign(side.header_bytes, side.header_bytes + kFrameHeaderSize);
        side.held.insert(side.held.end(), data, data + size);
        side.header_have = 0;
        side.position -= kFrameHeaderSize;
        return;
      }
      side.phase = Phase::kFramePayload;
      BeginFrame(side);
      continue;
    }
    // kFramePayload
    const size_t used = ConsumePayload(side, data, size);
    side.position += used;
    data += used;
    size -= used;
    if (side.payload_left == 0 && side.phase == Phase::kFramePayload) EndFrame(side);
  }
}

bool Http2ConnectionDecoder::Impl::MustWaitForRequest(const Side& side) const {
  if (!side.may_hold || stats.client_side < 0 || side.index == stats.client_side) return false;
  const FrameHeader header = ParseFrameHeader(side.header_bytes);
  if (header.type != kFrameHeaders || (header.stream_id & 1) == 0) return false;
  const Side& client = sides[stats.client_side];
  if (!client.started || !client.hpack_ok) return false;
  return !RequestHeadersDone(client, header.stream_id);
}

bool Http2ConnectionDecoder::Impl::RequestHeadersDone(const Side& client,
                                                      uint32_t stream_id) const {
  if (client.highest_headers_stream > stream_id) return true;  // it moved past that stream
  if (client.highest_headers_stream < stream_id) return false;
  // Its HEADERS were begun; done once the header block is complete.
  return !(client.header_block_open ||
           (client.phase == Phase::kFramePayload && client.frame.type == kFrameHeaders &&
            client.frame.stream_id == stream_id));
}

void Http2ConnectionDecoder::Impl::ReleaseIfAnswered(Side& side) {
  // A released side may stop at a later stream: loop while progress is made.
  while (side.holding && CanRelease(side)) Release(side);
}

bool Http2ConnectionDecoder::Impl::CanRelease(const Side& side) const {
  const Side& client = sides[1 - side.index];
  return !client.started || !client.hpack_ok || RequestHeadersDone(client, side.held_for_stream);
}

void Http2ConnectionDecoder::Impl::Release(Side& side) {
  if (!side.holding) return;
  side.holding = false;
  std::vector<uint8_t> bytes;
  bytes.swap(side.held);
  Feed(side, bytes.data(), bytes.size());
}

void Http2ConnectionDecoder::Impl::Feed(Side& side, const uint8_t* data, size_t size) {
  if (side.holding) {
    side.held.insert(side.held.end(), data, data + size);
  } else {
    FeedFrames(side, data, size);
    while (!side.replay.empty()) {
      std::vector<uint8_t> replay;
      replay.swap(side.replay);
      FeedFrames(side, replay.data(), replay.size());
    }
  }
  if (side.holding && side.held.size() > limits.max_held_response_bytes) {
    // Waited long enough: decode without the method (it shows as unknown).
    side.may_hold = false;
    Release(side);
    side.may_hold = true;
  }
}

}  // namespace artune::probes
