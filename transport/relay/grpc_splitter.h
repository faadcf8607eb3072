// Finds the gRPC messages in one direction of a carried byte stream, so the relay
// can send each message's payload as a slice of its own (and the transport picks
// eager, rendezvous or chunked for it by size) while frame headers, gRPC prefixes
// and HTTP/2 control frames travel as literal bytes.
//
// Incremental: Feed() takes the stream in pieces of any size (down to one byte)
// and classifies every byte exactly once, as a literal byte or as a payload byte of
// a numbered message. Nothing is changed or dropped: concatenating the runs gives
// back the input, whatever it is.
//
// The reader follows HTTP/2 framing (RFC 9113: the client preface on the client's
// side, 9-byte frame headers, PADDED DATA frames) and gRPC's length-prefixed
// messages (5-byte prefix) per stream across DATA frames. A stream that is not
// HTTP/2 (no preface, a first frame that is not SETTINGS) or that breaks the framing
// makes the splitter opaque: every later byte is literal. Memory is bounded: at
// most kMaxStreams open streams are tracked, past that the splitter goes opaque.
//
// Threading: none; one splitter per direction of one connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace artune::relay {

// A run of consecutive bytes of the stream: literal (message == 0) or part of the
// payload of message `message` (numbered from 1 in the order messages start).
struct ByteRun {
  uint64_t length = 0;
  uint64_t message = 0;
};

class GrpcSplitter {
 public:
  // The side whose bytes this splitter reads: the client's bytes begin with the
  // HTTP/2 preface, the server's with a SETTINGS frame.
  enum class Side { kClient, kServer };
  static constexpr size_t kMaxStreams = 4096;

  explicit GrpcSplitter(Side side);

  // Classifies `bytes`, the next bytes of the stream, appending runs to `runs`
  // (adjacent runs of the same kind are merged, also with the last run already in
  // `runs`).
  void Feed(std::span<const std::byte> bytes, std::vector<ByteRun>& runs);

  bool opaque() const { return state_ == State::kOpaque; }
  uint64_t messages_started() const { return next_message_ - 1; }

 private:
  enum class State { kPreface, kFrameHeader, kPadLength, kData, kPadding, kOtherPayload, kOpaque };
  struct GrpcStream {
    uint8_t prefix[5] = {};
    uint32_t prefix_have = 0;
    uint64_t message_left = 0;  // payload bytes of the current message still to come
    uint64_t message = 0;       // its number
  };

  void Emit(uint64_t length, uint64_t message, std::vector<ByteRun>& runs);
  void StartFrame();
  // Consumes DATA bytes of the current frame for its stream; returns bytes used.
  size_t FeedData(const std::byte* data, size_t size, std::vector<ByteRun>& runs);
  void GoOpaque() { state_ = State::kOpaque; }

  State state_;
  uint32_t preface_have_ = 0;
  uint8_t header_[9] = {};
  uint32_t header_have_ = 0;
  bool first_frame_ = true;
  // The current frame.
  uint32_t frame_left_ = 0;  // bytes of the frame payload not yet consumed
  uint8_t frame_type_ = 0;
  uint8_t frame_flags_ = 0;
  uint32_t frame_stream_ = 0;
  uint32_t padding_ = 0;
  uint64_t next_message_ = 1;
  std::unordered_map<uint32_t, GrpcStream> streams_;
};

}  // namespace artune::relay
