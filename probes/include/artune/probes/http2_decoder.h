// Decodes the two byte streams of one TCP connection as HTTP/2 carrying gRPC, and
// reports every complete gRPC message with its stream's method.
//
// Streaming: bytes are consumed as they arrive and never buffered whole. What is
// kept per connection is bounded by DecoderLimits: frame headers, small control
// payloads, HPACK state (nghttp2's inflater, one per direction), per stream the
// 5-byte gRPC header and, for RecvTensor responses, the first bytes of each message;
// and while resynchronising, at most `resync_buffer_bytes`.
//
// Joining midway (FlowOrigin::kMidStream) or after a gap: the decoder looks for a
// chain of plausible frame headers (see probes/README.md), resumes there and marks
// the direction's HPACK state as lost, so new streams get method "unknown". Streams
// whose HEADERS were not seen on a side have no gRPC message boundary on that side:
// their DATA is counted (data_frames, unattributed_data_bytes) but yields no
// messages.
//
// Bad input never stops decoding: it is counted in DecodeErrorCounts by kind and the
// decoder resynchronises or skips. Threading: one thread per decoder (the backend's).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "artune/probes/event.h"
#include "artune/probes/tensor.h"

namespace artune::probes {

enum class DecodeError : uint8_t {
  kNotHttp2,                // a direction began with bytes that are not HTTP/2
  kInvalidFrameHeader,      // impossible length/stream id for the frame type: resync
  kBadPadding,              // pad length not smaller than the frame payload
  kHpackError,              // nghttp2's inflater rejected a header block
  kContinuationMismatch,    // CONTINUATION out of place, or a header block cut short
  kPushPromiseUnsupported,  // server push (gRPC never pushes): HPACK state dropped
  kResyncDiscard,           // bytes skipped while looking for frame boundaries
  kStreamGap,               // the backend reported lost bytes in a direction
  kStreamJoinedMidway,      // DATA on a stream whose HEADERS were not seen
  kGrpcBadFlag,             // gRPC compressed-flag byte neither 0 nor 1
  kTruncatedFrame,          // a direction ended inside a frame
  kTruncatedMessage,        // a stream ended inside a gRPC message
  kTooManyStreams,          // more open streams than DecoderLimits allow
  kTensorParseError,        // a RecvTensor response whose head is not a TensorProto
  kCount,
};
const char* DecodeErrorName(DecodeError error);

struct DecodeErrorCounts {
  std::array<uint64_t, static_cast<size_t>(DecodeError::kCount)> counts{};
  void Add(DecodeError error, uint64_t n = 1) { counts[static_cast<size_t>(error)] += n; }
  uint64_t Get(DecodeError error) const { return counts[static_cast<size_t>(error)]; }
  uint64_t Total() const;
};

enum class MessageDirection : uint8_t { kRequest, kResponse };
const char* MessageDirectionName(MessageDirection direction);

struct GrpcMessage {
  uint64_t connection_id = 0;
  uint32_t stream_id = 0;
  MessageDirection direction = MessageDirection::kRequest;
  std::string_view method;  // the stream's :path, or "unknown"; valid during the call
  bool method_known = false;
  bool compressed = false;
  uint32_t length = 0;                   // payload bytes, without the 5-byte gRPC header
  uint64_t timestamp_ns = 0;             // of the segment holding the message's last byte
  const TensorHeader* tensor = nullptr;  // RecvTensor responses whose head parsed
  // The call (stream) starts here: the first request message of its stream. Every
  // call that starts also ends, exactly once, in GrpcMessageObserver::OnCallEnd (at
  // the latest when a side of its connection is End()ed).
  bool call_start = false;
};

// Why a call stopped being in flight (see GrpcMessageObserver::OnCallEnd).
enum class CallEndReason : uint8_t {
  kResponseEnded,   // the response side's END_STREAM (trailers, or DATA with the flag)
  kReset,           // RST_STREAM from either side
  kConnectionEnded  // a side of the connection ended (FIN, RST, close, end of capture)
};

struct CallEnd {
  uint64_t connection_id = 0;
  uint32_t stream_id = 0;
  CallEndReason reason = CallEndReason::kResponseEnded;
  uint64_t timestamp_ns = 0;  // of the last bytes decoded (0 when a side ended)
};

// Where one complete HTTP/2 frame (or the client preface) lay in a side's byte
// stream, and whose it was: lets a syscall backend's iovecs be attributed to the
// gRPC method whose frame they carried (ProbeSession). Offsets count the side's
// bytes from its first one; they are only reported while they are exact, i.e. for
// a side decoded from its first byte that has not lost framing (no resync, no gap).
struct FrameSpan {
  uint64_t connection_id = 0;
  int side = 0;
  uint64_t begin = 0;  // offset of the frame's first header byte
  uint64_t end = 0;    // one past its last payload byte
  uint32_t stream_id = 0;
  // The stream's method, empty for connection frames (stream 0) and streams whose
  // :path is unknown; valid during the call.
  std::string_view method;
  MessageDirection direction = MessageDirection::kRequest;
};

class GrpcMessageObserver {
 public:
  virtual ~GrpcMessageObserver() = default;
  virtual void OnGrpcMessage(const GrpcMessage& message) = 0;
  // Every complete frame whose position is exact (see FrameSpan); default: ignored.
  virtual void OnFrame(const FrameSpan& span) { (void)span; }
  // A call that started (GrpcMessage::call_start) is no longer in flight: its
  // response stream ended, it was reset, or its connection ended. Called once per
  // started call, after its last message; when the response ended before the
  // request's first message was decoded, right after that message. Calls whose end
  // is lost (a gap swallowed the END_STREAM) end with their connection. Default:
  // ignored.
  virtual void OnCallEnd(const CallEnd& end) { (void)end; }
};

struct DecoderLimits {
  size_t max_open_streams = 1024;
  size_t resync_buffer_bytes = 256 * 1024;
  uint32_t resync_max_frame_length = 1 << 20;  // larger frames are not believed in resync
  size_t resync_chain_frames = 3;              // consecutive plausible headers to resume
  size_t tensor_head_bytes = 1024;             // bytes kept per RecvTensor response head
  // A syscall backend may report a response's bytes before the request they answer
  // (the two sides' calls are recorded by different threads, and a record can be
  // published late): then the server side waits, its bytes held up to this many,
  // until the client side's HEADERS name the stream's method (see Feed).
  size_t max_held_response_bytes = 8u << 20;
};

struct ConnectionDecodeStats {
  uint64_t frames = 0;
  uint64_t data_frames = 0;
  uint64_t data_bytes = 0;               // DATA payload bytes, padding excluded
  uint64_t unattributed_data_bytes = 0;  // DATA bytes not placed in a gRPC message
  uint64_t messages = 0;
  uint64_t discarded_bytes = 0;  // skipped while resynchronising
  // Frame headers the resync search examined: its work, linear in the bytes.
  uint64_t resync_headers_examined = 0;
  bool joined_midway = false;  // some direction lost HPACK state
  int client_side = -1;        // 0 or 1 once known, -1 before
};

// The two directions are called sides 0 and 1; the caller picks which is which and
// keeps it (ProbeSession uses the ordering of the flow keys).
class Http2ConnectionDecoder {
 public:
  Http2ConnectionDecoder(uint64_t connection_id, GrpcMessageObserver& observer,
                         DecodeErrorCounts& errors, const DecoderLimits& limits = {});
  ~Http2ConnectionDecoder();
  Http2ConnectionDecoder(const Http2ConnectionDecoder&) = delete;
  Http2ConnectionDecoder& operator=(const Http2ConnectionDecoder&) = delete;

  // Which side is the server when nothing in the stream says so (no preface, no
  // decodable :path/:status), e.g. from the capture's port. Default: side 1.
  void SetServerSideHint(int side);
  // Starts a side; without a call, a side starts as kMidStream on its first bytes.
  void Begin(int side, FlowOrigin origin);
  // Decodes the side's next bytes. Once roles are known, the server side never runs
  // ahead of the client side: HEADERS opening a stream whose request HEADERS have
  // not been decoded yet make the server side hold its bytes (bounded by
  // max_held_response_bytes) until they have, or the client side ends or loses
  // HPACK state, so every response gets its method even when a backend reports
  // the two directions out of causal order.
  void Feed(int side, std::span<const uint8_t> bytes, uint64_t timestamp_ns);
  void Gap(int side, uint64_t missing_bytes);
  // The side's byte stream ended; partial frames and messages are counted.
  void End(int side);

  const ConnectionDecodeStats& stats() const;
  // The side taken as the client now: stats().client_side when the stream said so,
  // else the side that opened more new streams, else the opposite of the hint.
  int client_side() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace artune::probes
