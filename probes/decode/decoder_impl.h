// Internal to probes/decode/: the state of Http2ConnectionDecoder (Impl) and of
// its two sides and streams, shared by the files that implement its layers:
//   http2_decoder.cc  the public class, roles, starting sides, error names
//   http2_frames.cc   frame headers and payloads byte by byte, frame spans,
//                     holding a server side that runs ahead of its requests
//   http2_resync.cc   finding frame boundaries again (joined midway, gaps)
//   hpack_headers.cc  header blocks through nghttp2's inflater, :path/:status
//   grpc_framing.cc   streams and the 5-byte gRPC message framing inside DATA
// See http2_decoder.h for the contract and probes/README.md for the rules.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "artune/probes/http2_decoder.h"
#include "frame_header.h"

namespace artune::probes {
namespace decode_detail {

inline constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
inline constexpr std::string_view kUnknownMethod = "unknown";
inline constexpr size_t kControlPayloadKept = 16;
inline constexpr size_t kResyncScanStep = 256;  // enough for RST_STREAM, GOAWAY's first fields

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
  // The call's life for OnCallEnd: open from its first request message until its
  // response ends, it is reset or the connection ends; done afterwards, so a call
  // starts and ends once.
  bool call_open = false;
  bool call_done = false;
};

// The resync search's state, kept between scans so each buffered byte is looked at
// a bounded number of times (linear in the bytes however they arrive). Positions
// are absolute: bytes buffered since resync began, dropped ones included.
struct ResyncScan {
  // A chain of plausible frame headers starting at `start`, waiting for the bytes
  // of its next header (at `offset`).
  struct Chain {
    uint64_t offset;
    uint64_t start;
    size_t headers;  // plausible headers so far
    bool operator>(const Chain& other) const { return offset > other.offset; }
  };
  uint64_t base = 0;        // absolute position of resync[0]
  size_t front = 0;         // resync[front] is the first byte not discarded
  uint64_t next_start = 0;  // first position not yet tried as a chain start
  std::priority_queue<Chain, std::vector<Chain>, std::greater<>> waiting;  // by offset
  std::multiset<uint64_t> starts;         // starts of the waiting chains
  std::multiset<uint64_t> starts_of_two;  // ... of those with two headers or more
};

struct Side;
// Empties a side's resync buffer and search.
void ResetResync(Side& side);
// Bytes buffered for the resync search and not discarded.
size_t ResyncBytes(const Side& side);

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
  // Buffered bytes while resynchronising; [0, resync_scan.front) are discarded
  // already and are erased in bulk (so dropping bytes costs what it drops).
  std::vector<uint8_t> resync;
  ResyncScan resync_scan;
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

}  // namespace decode_detail

struct Http2ConnectionDecoder::Impl {
  using Side = decode_detail::Side;
  using StreamState = decode_detail::StreamState;
  using GrpcFramer = decode_detail::GrpcFramer;

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

  // ---- roles and sides (http2_decoder.cc, with the public class) ----

  ~Impl();
  // Which side is the client, from the strongest evidence there is: the preface or
  // decoded :path/:status; else which side opens new streams more often (joined
  // midway, only streams in flight at the join can be opened by a response); else
  // the caller's hint.
  int ClientSide() const;
  MessageDirection DirectionOf(int side) const;
  void StartSide(Side& side, FlowOrigin origin);

  // ---- frames: the byte-level state machine, frame spans, holding the server side
  // (http2_frames.cc) ----

  void BeginFrame(Side& side);
  void AfterPadLength(Side& side);
  uint32_t BodyLeft(const Side& side) const;
  void ReportFrame(const Side& side, uint64_t begin, uint64_t end, uint32_t stream_id);
  void EndFrame(Side& side);
  // Consumes payload bytes of the current frame; returns how many were used.
  size_t ConsumePayload(Side& side, const uint8_t* data, size_t size);
  void FeedFrames(Side& side, const uint8_t* data, size_t size);
  // At a complete frame header on `side`: is it HEADERS opening a client stream
  // that the client side, decoding intact from its start, has not sent yet?
  bool MustWaitForRequest(const Side& side) const;
  bool RequestHeadersDone(const Side& client, uint32_t stream_id) const;
  void ReleaseIfAnswered(Side& side);
  bool CanRelease(const Side& side) const;
  // Decodes what `side` held (it may hold again at a later stream).
  void Release(Side& side);
  void Feed(Side& side, const uint8_t* data, size_t size);

  // ---- resynchronisation (http2_resync.cc) ----

  void EnterResync(Side& side);
  // Scans the resync buffer for a chain of plausible frame headers. Returns the
  // offset to resume at, or -1 when more bytes are needed / none found yet.
  long FindResyncPoint(Side& side, bool buffer_full);
  // Buffers bytes while resynchronising. Returns how many of `size` were taken;
  // when a resume point is found, the buffered bytes from there on plus the rest
  // of the input are moved to side.replay and decoding continues from them
  // (iteratively, in Feed, so garbage cannot deepen the stack).
  void FeedResync(Side& side, const uint8_t* data, size_t size);

  // ---- HPACK and header fields (hpack_headers.cc) ----

  void LoseHpack(Side& side);
  void OnHeaderField(Side& side, std::string_view name, std::string_view value);
  void FeedHeaderBlock(Side& side, const uint8_t* data, size_t size, bool final);

  // ---- streams and gRPC message framing inside DATA (grpc_framing.cc) ----

  StreamState* FindOrCreateStream(uint32_t stream_id);
  void MaybeRetireStream(uint32_t stream_id, const StreamState& stream);
  void EmitMessage(Side& side, uint32_t stream_id, StreamState& stream, GrpcFramer& framer);
  void FeedGrpc(Side& side, uint32_t stream_id, StreamState* stream, const uint8_t* data,
                size_t size);
  void EndStreamSide(Side& side, uint32_t stream_id);
  // The call of `stream` is over (see GrpcMessageObserver::OnCallEnd): reports it
  // if it was open, and keeps it from opening later.
  void FinishCall(uint32_t stream_id, StreamState& stream, CallEndReason reason);
};

}  // namespace artune::probes
