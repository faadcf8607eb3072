// HTTP/2 + gRPC stream decoder. The frame layer is a byte-at-a-time state machine
// over spans (no frame is buffered whole); see http2_decoder.h for the contract and
// probes/README.md for the resynchronisation rule.
#include "artune/probes/http2_decoder.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "frame_header.h"

namespace artune::probes {
namespace {

constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::string_view kUnknownMethod = "unknown";
constexpr size_t kControlPayloadKept = 16;
constexpr size_t kResyncScanStep = 256;  // enough for RST_STREAM, GOAWAY's first fields

enum class Phase : uint8_t {
  kPreface,       // at the start of a handshake flow: client preface or server SETTINGS
  kFrameHeader,   // collecting the 9-byte header
  kFramePayload,  // inside a frame's payload
  kResync,        // looking for frame boundaries
};

// Where we are inside the current frame's payload.
enum class PayloadPart : uint8_t { kPadLength, kPriority, kPromisedId, kBody, kPadding };

struct GrpcFramer {
  bool synced = false;
  uint8_t header[5] = {};
  uint8_t header_have = 0;
  bool compressed = false;
  uint32_t length = 0;
  uint32_t remaining = 0;
  std::vector<uint8_t> head;  // RecvTensor responses only, at most tensor_head_bytes

  bool InMessage() const { return header_have > 0; }
  void Reset() {
    header_have = 0;
    remaining = 0;
    head.clear();
  }
};

struct StreamState {
  std::string method;  // empty: unknown
  GrpcFramer framer[2];
  bool headers_seen[2] = {false, false};
  bool ended[2] = {false, false};
  bool counted_midway[2] = {false, false};
  bool is_recv_tensor = false;
};

struct Side {
  int index = 0;
  Phase phase = Phase::kFrameHeader;
  bool started = false;
  size_t preface_matched = 0;
  uint8_t header_bytes[kFrameHeaderSize] = {};
  size_t header_have = 0;
  FrameHeader frame;
  uint32_t payload_left = 0;  // bytes of the current frame not yet consumed
  PayloadPart part = PayloadPart::kBody;
  uint32_t part_left = 0;  // bytes left in `part` (kPriority, kPromisedId, kPadding)
  uint8_t pad_length = 0;
  bool frame_bad = false;  // skip the rest of this frame
  uint8_t control[kControlPayloadKept] = {};
  size_t control_have = 0;
  // HPACK: one inflater per direction, as the protocol keeps one table per direction.
  nghttp2_hd_inflater* inflater = nullptr;
  bool hpack_ok = true;            // false once state was lost (gap, join, error)
  bool header_block_open = false;  // HEADERS without END_HEADERS: CONTINUATION next
  uint32_t header_block_stream = 0;
  bool header_block_failed = false;
  bool block_final_fed = false;     // END_HEADERS fragment handed to the inflater
  bool expect_settings = false;     // first frame of a fresh side must be SETTINGS
  uint32_t pending_end_stream = 0;  // HEADERS with END_STREAM waiting for CONTINUATION
  std::vector<uint8_t> resync;
  size_t resync_scan_from = 0;
  size_t resync_scanned_size = 0;  // buffer size at the last scan
  std::vector<uint8_t> replay;     // bytes to decode again after resynchronising
  // Stream offsets for FrameSpan: bytes consumed from the side's first byte, exact
  // until the side loses framing (resync or gap), after which no spans are given.
  uint64_t position = 0;
  uint64_t frame_begin = 0;
  bool position_exact = true;
  // Highest stream id this side sent HEADERS for.
  uint32_t highest_headers_stream = 0;
  // Server side waiting for the client side (see Http2ConnectionDecoder::Feed):
  // `held` starts with the HEADERS frame header of stream `held_for_stream`.
  bool holding = false;
  bool may_hold = true;  // false while ending: held bytes are decoded, not held again
  uint32_t held_for_stream = 0;
  std::vector<uint8_t> held;
};

}  // namespace

struct Http2ConnectionDecoder::Impl {
  uint64_t connection_id;
  GrpcMessageObserver& observer;
  DecodeErrorCounts& errors;
  DecoderLimits limits;
  ConnectionDecodeStats stats;
  int server_side_hint = 1;
  Side sides[2];
  std::unordered_map<uint32_t, StreamState> streams;
  uint64_t stream_opens[2] = {0, 0};  // HEADERS on a stream id above all seen before
  uint32_t highest_stream_id = 0;
  bool fed[2] = {false, false};  // bytes seen on the side
  uint64_t now_ns = 0;

  Impl(uint64_t id, GrpcMessageObserver& obs, DecodeErrorCounts& errs, const DecoderLimits& lim)
      : connection_id(id), observer(obs), errors(errs), limits(lim) {
    for (int i = 0; i < 2; ++i) sides[i].index = i;
  }

  ~Impl() {
    for (Side& side : sides) {
      if (side.inflater != nullptr) nghttp2_hd_inflate_del(side.inflater);
    }
  }

  // Which side is the client, from the strongest evidence there is: the preface or
  // decoded :path/:status; else which side opens new streams more often (joined
  // midway, only streams in flight at the join can be opened by a response); else
  // the caller's hint.
  int ClientSide() const {
    if (stats.client_side >= 0) return stats.client_side;
    // Votes count only when both directions are seen: with one direction, that
    // side "opens" every stream whichever role it has.
    if (fed[0] && fed[1] && stream_opens[0] != stream_opens[1]) {
      return stream_opens[0] > stream_opens[1] ? 0 : 1;
    }
    return 1 - server_side_hint;
  }

  MessageDirection DirectionOf(int side) const {
    const int client = ClientSide();
    return side == client ? MessageDirection::kRequest : MessageDirection::kResponse;
  }

  void LoseHpack(Side& side) {
    if (side.hpack_ok) {
      side.hpack_ok = false;
      stats.joined_midway = true;
    }
    side.header_block_open = false;
  }

  void StartSide(Side& side, FlowOrigin origin) {
    side.started = true;
    if (origin == FlowOrigin::kHandshake) {
      side.phase = Phase::kPreface;
      side.preface_matched = 0;
    } else {
      LoseHpack(side);
      EnterResync(side);
    }
  }

  void EnterResync(Side& side) {
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

  StreamState* FindOrCreateStream(uint32_t stream_id) {
    auto it = streams.find(stream_id);
    if (it != streams.end()) return &it->second;
    if (streams.size() >= limits.max_open_streams) {
      errors.Add(DecodeError::kTooManyStreams);
      return nullptr;
    }
    return &streams[stream_id];
  }

  void MaybeRetireStream(uint32_t stream_id, const StreamState& stream) {
    if (stream.ended[0] && stream.ended[1]) streams.erase(stream_id);
  }

  // ---- gRPC message framing inside DATA ----

  void EmitMessage(Side& side, uint32_t stream_id, StreamState& stream, GrpcFramer& framer) {
    GrpcMessage message;
    message.connection_id = connection_id;
    message.stream_id = stream_id;
    message.direction = DirectionOf(side.index);
    message.method_known = !stream.method.empty();
    message.method = message.method_known ? std::string_view(stream.method) : kUnknownMethod;
    message.compressed = framer.compressed;
    message.length = framer.length;
    message.timestamp_ns = now_ns;
    TensorHeader tensor;
    if (stream.is_recv_tensor && message.direction == MessageDirection::kResponse &&
        !framer.compressed) {
      const TensorParseResult result =
          ParseRecvTensorResponseHead(framer.head, framer.length, tensor);
      if (result == TensorParseResult::kOk) {
        message.tensor = &tensor;
      } else if (result != TensorParseResult::kNoTensor) {
        errors.Add(DecodeError::kTensorParseError);
      }
    }
    ++stats.messages;
    observer.OnGrpcMessage(message);
    framer.Reset();
  }

  void FeedGrpc(Side& side, uint32_t stream_id, StreamState* stream, const uint8_t* data,
                size_t size) {
    if (stream == nullptr || !stream->framer[side.index].synced) {
      stats.unattributed_data_bytes += size;
      return;
    }
    GrpcFramer& framer = stream->framer[side.index];
    while (size > 0) {
      if (framer.header_have < 5) {
        const size_t take = std::min<size_t>(5 - framer.header_have, size);
        std::memcpy(framer.header + framer.header_have, data, take);
        framer.header_have = static_cast<uint8_t>(framer.header_have + take);
        data += take;
        size -= take;
        if (framer.header_have < 5) return;
        if (framer.header[0] > 1) {
          errors.Add(DecodeError::kGrpcBadFlag);
          framer.Reset();
          framer.synced = false;
          stats.unattributed_data_bytes += size;
          return;
        }
        framer.compressed = framer.header[0] == 1;
        framer.length = ReadBigEndian32(framer.header + 1);
        framer.remaining = framer.length;
        if (framer.remaining == 0) {
          EmitMessage(side, stream_id, *stream, framer);
        }
        continue;
      }
      const size_t take = std::min<size_t>(framer.remaining, size);
      if (stream->is_recv_tensor && framer.head.size() < limits.tensor_head_bytes) {
        const size_t keep = std::min(take, limits.tensor_head_bytes - framer.head.size());
        framer.head.insert(framer.head.end(), data, data + keep);
      }
      framer.remaining -= static_cast<uint32_t>(take);
      data += take;
      size -= take;
      if (framer.remaining == 0) EmitMessage(side, stream_id, *stream, framer);
    }
  }

  void EndStreamSide(Side& side, uint32_t stream_id) {
    auto it = streams.find(stream_id);
    if (it == streams.end()) return;
    StreamState& stream = it->second;
    GrpcFramer& framer = stream.framer[side.index];
    if (framer.synced && framer.InMessage()) errors.Add(DecodeError::kTruncatedMessage);
    framer.Reset();
    stream.ended[side.index] = true;
    MaybeRetireStream(stream_id, stream);
  }

  // ---- HPACK ----

  void OnHeaderField(Side& side, std::string_view name, std::string_view value) {
    if (name == ":path") {
      stats.client_side = side.index;
      // The stream was created (or refused, when too many) by its HEADERS frame.
      auto it = streams.find(side.header_block_stream);
      if (it != streams.end()) {
        it->second.method.assign(value);
        it->second.is_recv_tensor = value == kRecvTensorMethod;
      }
    } else if (name == ":status") {
      stats.client_side = 1 - side.index;
    }
  }

  void FeedHeaderBlock(Side& side, const uint8_t* data, size_t size, bool final) {
    if (!side.hpack_ok || side.header_block_failed) return;
    if (side.inflater == nullptr && nghttp2_hd_inflate_new(&side.inflater) != 0) {
      side.inflater = nullptr;
      LoseHpack(side);
      return;
    }
    // nghttp2 takes a non-const pointer but does not write through it.
    uint8_t* input = const_cast<uint8_t*>(data);
    size_t left = size;
    for (;;) {
      nghttp2_nv field;
      int flags = 0;
      const ssize_t used =
          nghttp2_hd_inflate_hd2(side.inflater, &field, &flags, input, left, final ? 1 : 0);
      if (used < 0) {
        errors.Add(DecodeError::kHpackError);
        side.header_block_failed = true;
        LoseHpack(side);
        return;
      }
      input += used;
      left -= static_cast<size_t>(used);
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
        OnHeaderField(side, {reinterpret_cast<const char*>(field.name), field.namelen},
                      {reinterpret_cast<const char*>(field.value), field.valuelen});
      }
      if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
        nghttp2_hd_inflate_end_headers(side.inflater);
        return;
      }
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return;
    }
  }

  // ---- frames ----

  void BeginFrame(Side& side) {
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

  void AfterPadLength(Side& side) {
    const FrameHeader& f = side.frame;
    if (f.type == kFrameHeaders && (f.flags & kFlagPriority) != 0) {
      side.part = PayloadPart::kPriority;
      side.part_left = 5;
    } else {
      side.part = PayloadPart::kBody;
    }
  }

  uint32_t BodyLeft(const Side& side) const {
    return side.payload_left > side.pad_length ? side.payload_left - side.pad_length : 0;
  }

  void ReportFrame(const Side& side, uint64_t begin, uint64_t end, uint32_t stream_id) {
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

  void EndFrame(Side& side) {
    const FrameHeader& f = side.frame;
    side.phase = Phase::kFrameHeader;
    // Before the stream may be retired below (END_STREAM), while its method is known.
    ReportFrame(side, side.frame_begin, side.frame_begin + kFrameHeaderSize + f.length,
                f.stream_id);
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
          streams.erase(it);
        }
        break;
      }
      default:
        break;  // SETTINGS, PING, GOAWAY, WINDOW_UPDATE, PRIORITY, unknown: nothing to keep
    }
  }

  // Consumes payload bytes of the current frame; returns how many were used.
  size_t ConsumePayload(Side& side, const uint8_t* data, size_t size) {
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

  // ---- resynchronisation ----

  // Scans the resync buffer for a chain of plausible frame headers. Returns the
  // offset to resume at, or -1 when more bytes are needed / none found yet.
  long FindResyncPoint(Side& side, bool buffer_full) {
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

  // Buffers bytes while resynchronising. Returns how many of `size` were taken;
  // when a resume point is found, the buffered bytes from there on plus the rest
  // of the input are moved to side.replay and decoding continues from them
  // (iteratively, in Feed, so garbage cannot deepen the stack).
  void FeedResync(Side& side, const uint8_t* data, size_t size) {
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

  void FeedFrames(Side& side, const uint8_t* data, size_t size) {
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

  // ---- holding the server side back (see Http2ConnectionDecoder::Feed) ----

  // At a complete frame header on `side`: is it HEADERS opening a client stream
  // that the client side, decoding intact from its start, has not sent yet?
  bool MustWaitForRequest(const Side& side) const {
    if (!side.may_hold || stats.client_side < 0 || side.index == stats.client_side) return false;
    const FrameHeader header = ParseFrameHeader(side.header_bytes);
    if (header.type != kFrameHeaders || (header.stream_id & 1) == 0) return false;
    const Side& client = sides[stats.client_side];
    if (!client.started || !client.hpack_ok) return false;
    return !RequestHeadersDone(client, header.stream_id);
  }

  bool RequestHeadersDone(const Side& client, uint32_t stream_id) const {
    if (client.highest_headers_stream > stream_id) return true;  // it moved past that stream
    if (client.highest_headers_stream < stream_id) return false;
    // Its HEADERS were begun; done once the header block is complete.
    return !(client.header_block_open ||
             (client.phase == Phase::kFramePayload && client.frame.type == kFrameHeaders &&
              client.frame.stream_id == stream_id));
  }

  void ReleaseIfAnswered(Side& side) {
    // A released side may stop at a later stream: loop while progress is made.
    while (side.holding && CanRelease(side)) Release(side);
  }

  bool CanRelease(const Side& side) const {
    const Side& client = sides[1 - side.index];
    return !client.started || !client.hpack_ok || RequestHeadersDone(client, side.held_for_stream);
  }

  // Decodes what `side` held (it may hold again at a later stream).
  void Release(Side& side) {
    if (!side.holding) return;
    side.holding = false;
    std::vector<uint8_t> bytes;
    bytes.swap(side.held);
    Feed(side, bytes.data(), bytes.size());
  }

  void Feed(Side& side, const uint8_t* data, size_t size) {
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
};

Http2ConnectionDecoder::Http2ConnectionDecoder(uint64_t connection_id,
                                               GrpcMessageObserver& observer,
                                               DecodeErrorCounts& errors,
                                               const DecoderLimits& limits)
    : impl_(std::make_unique<Impl>(connection_id, observer, errors, limits)) {}

Http2ConnectionDecoder::~Http2ConnectionDecoder() = default;

void Http2ConnectionDecoder::SetServerSideHint(int side) { impl_->server_side_hint = side & 1; }

void Http2ConnectionDecoder::Begin(int side, FlowOrigin origin) {
  impl_->StartSide(impl_->sides[side & 1], origin);
}

void Http2ConnectionDecoder::Feed(int side, std::span<const uint8_t> bytes, uint64_t timestamp_ns) {
  Side& s = impl_->sides[side & 1];
  if (!s.started) impl_->StartSide(s, FlowOrigin::kMidStream);
  if (bytes.empty()) return;
  impl_->now_ns = timestamp_ns;
  impl_->fed[side & 1] = true;
  impl_->Feed(s, bytes.data(), bytes.size());
  impl_->ReleaseIfAnswered(impl_->sides[1 - (side & 1)]);
}

void Http2ConnectionDecoder::Gap(int side, uint64_t missing_bytes) {
  (void)missing_bytes;
  Side& s = impl_->sides[side & 1];
  // Bytes held before the gap are decoded first; the client side losing its
  // HPACK state below also frees a server side waiting for it.
  s.may_hold = false;
  impl_->Release(s);
  s.may_hold = true;
  impl_->errors.Add(DecodeError::kStreamGap);
  s.position_exact = false;
  if (!s.started) {
    impl_->StartSide(s, FlowOrigin::kMidStream);
    return;
  }
  impl_->LoseHpack(s);
  impl_->EnterResync(s);
  impl_->ReleaseIfAnswered(impl_->sides[1 - (side & 1)]);
}

void Http2ConnectionDecoder::End(int side) {
  Impl& impl = *impl_;
  Side& s = impl.sides[side & 1];
  if (!s.started) return;
  s.may_hold = false;  // what it held is decoded now, whatever the other side does
  impl.Release(s);
  s.may_hold = true;
  if (s.phase == Phase::kResync && !s.resync.empty()) {
    // A last scan over what is buffered: frames may still be complete in it.
    const long point = impl.FindResyncPoint(s, /*buffer_full=*/false);
    if (point >= 0) {
      if (point > 0) {
        impl.errors.Add(DecodeError::kResyncDiscard);
        impl.stats.discarded_bytes += static_cast<uint64_t>(point);
      }
      std::vector<uint8_t> rest(s.resync.begin() + point, s.resync.end());
      s.resync.clear();
      s.phase = Phase::kFrameHeader;
      impl.Feed(s, rest.data(), rest.size());
    }
  }
  if ((s.phase == Phase::kFrameHeader && s.header_have > 0) || s.phase == Phase::kFramePayload ||
      (s.phase == Phase::kPreface && s.preface_matched > 0 &&
       s.preface_matched < kClientPreface.size())) {
    impl.errors.Add(DecodeError::kTruncatedFrame);
  }
  for (auto it = impl.streams.begin(); it != impl.streams.end();) {
    GrpcFramer& framer = it->second.framer[s.index];
    if (framer.synced && framer.InMessage()) impl.errors.Add(DecodeError::kTruncatedMessage);
    framer.Reset();
    it->second.ended[s.index] = true;
    if (it->second.ended[0] && it->second.ended[1]) {
      it = impl.streams.erase(it);
    } else {
      ++it;
    }
  }
  if (s.phase == Phase::kResync && !s.resync.empty()) {
    // Bytes still waiting for a frame boundary when the stream ended: discarded.
    impl.errors.Add(DecodeError::kResyncDiscard);
    impl.stats.discarded_bytes += s.resync.size();
  }
  s.phase = Phase::kFrameHeader;
  s.header_have = 0;
  s.resync.clear();
  s.started = false;
  impl.ReleaseIfAnswered(impl.sides[1 - (side & 1)]);  // no request will follow now
}

const ConnectionDecodeStats& Http2ConnectionDecoder::stats() const { return impl_->stats; }

int Http2ConnectionDecoder::client_side() const { return impl_->ClientSide(); }

const char* DecodeErrorName(DecodeError error) {
  switch (error) {
    case DecodeError::kNotHttp2:
      return "not_http2";
    case DecodeError::kInvalidFrameHeader:
      return "invalid_frame_header";
    case DecodeError::kBadPadding:
      return "bad_padding";
    case DecodeError::kHpackError:
      return "hpack_error";
    case DecodeError::kContinuationMismatch:
      return "continuation_mismatch";
    case DecodeError::kPushPromiseUnsupported:
      return "push_promise_unsupported";
    case DecodeError::kResyncDiscard:
      return "resync_discard";
    case DecodeError::kStreamGap:
      return "stream_gap";
    case DecodeError::kStreamJoinedMidway:
      return "stream_joined_midway";
    case DecodeError::kGrpcBadFlag:
      return "grpc_bad_flag";
    case DecodeError::kTruncatedFrame:
      return "truncated_frame";
    case DecodeError::kTruncatedMessage:
      return "truncated_message";
    case DecodeError::kTooManyStreams:
      return "too_many_streams";
    case DecodeError::kTensorParseError:
      return "tensor_parse_error";
    case DecodeError::kCount:
      break;
  }
  return "unknown_error";
}

uint64_t DecodeErrorCounts::Total() const {
  uint64_t total = 0;
  for (uint64_t count : counts) total += count;
  return total;
}

const char* MessageDirectionName(MessageDirection direction) {
  return direction == MessageDirection::kRequest ? "request" : "response";
}

}  // namespace artune::probes
