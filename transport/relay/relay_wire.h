// The relays' wire: the methods one relay calls on another's transport server and
// the bytes of each request. Version 1; both ends of a link run the same artune.
//
// A carried connection is named by (session, conn): the origin relay's random
// 64-bit session id and its own counter. Messages say which end's entry they are
// for (Toward), so one relay can be both the origin and the target of a link.
//
//   Open  origin -> target   {session, conn, origin_address, host, port}: dial
//                            host:port on the target's host; data flows back to the
//                            origin's server at origin_address.
//   Data  either way         head slice {toward, flags, session, conn, seq, run
//                            table, literal bytes} + one slice per gRPC message
//                            payload (the run table interleaves them with the
//                            literal bytes: each end sees exactly the bytes written).
//   Ack   either way         {toward, session, conn, written}: bytes of the stream
//                            the receiver has written to its socket (send credit).
//   Ping  either way         empty: liveness of the peer relay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"
#include "artune/transport/transport.h"
#include "grpc_splitter.h"

namespace artune::relay {

inline constexpr std::string_view kOpenMethod = "artune.relay/Open";
inline constexpr std::string_view kDataMethod = "artune.relay/Data";
inline constexpr std::string_view kAckMethod = "artune.relay/Ack";
inline constexpr std::string_view kPingMethod = "artune.relay/Ping";
// `artune relay` listens here by default; `artune run` looks for relays here.
inline constexpr uint16_t kDefaultRelayPort = 50061;

enum class Toward : uint8_t { kTarget = 0, kOrigin = 1 };
// Data flags: the sender's socket reached end of stream (half-close), or was reset.
inline constexpr uint8_t kFlagFin = 1;
inline constexpr uint8_t kFlagReset = 2;

struct OpenRequest {
  uint64_t session = 0;
  uint64_t conn = 0;
  std::string origin_address;  // HOST:PORT of the origin relay's server
  std::string host;            // the address the program dialled
  uint16_t port = 0;
};
std::vector<std::byte> EncodeOpen(const OpenRequest& open);
Result<OpenRequest> DecodeOpen(const transport::Message& message);

struct DataHeader {
  Toward toward = Toward::kTarget;
  uint8_t flags = 0;
  uint64_t session = 0;
  uint64_t conn = 0;
  uint64_t seq = 0;
};

// One Data request: the head slice and the payload buffers, which must live until
// the call completes. slices() is what goes to Client::CallAsync.
struct Chunk {
  std::vector<std::byte> head;
  std::vector<transport::Buffer> payloads;   // [0] unused; [i]: slice i when allocated
  std::vector<std::vector<std::byte>> heap;  // payloads the allocator refused
  std::vector<transport::ConstSlice> slices;
  bool in_place = false;     // some slice points into `bytes` (BuildChunk's in_place_min)
  transport::Buffer source;  // the caller's: the read buffer in-place slices point into
};
// Builds the Data request for `bytes` (the next bytes read from a socket, `runs`
// their classification by a GrpcSplitter, covering exactly `bytes`): each message's
// payload bytes in this chunk gathered into one buffer from `allocator` (heap memory
// when the allocator refuses). A message whose bytes in this chunk are one run of
// at least `in_place_min` bytes (0: none) is sent from `bytes` itself, no copy
// (then in_place is set, and `bytes` must live until the call completes: the
// caller moves its buffer into `source`). kInvalidArgument when the runs do not
// cover `bytes`.
Result<Chunk> BuildChunk(const DataHeader& header, std::span<const std::byte> bytes,
                         const std::vector<ByteRun>& runs, transport::Allocator& allocator,
                         size_t in_place_min = 0);

// A Data request read in place: its stream bytes as pieces of the request's slices,
// in stream order, valid while the Message lives. A receiver writes them to its
// socket straight from the transport's memory (no reassembly copy).
struct ChunkView {
  DataHeader header;
  std::vector<transport::ConstSlice> pieces;
  size_t bytes = 0;  // the pieces' total
};
// kProtocolError for a malformed request (short, bad version, runs that do not
// match the slices).
Result<ChunkView> ViewChunk(const transport::Message& message);

struct DecodedChunk {
  DataHeader header;
  std::vector<std::byte> bytes;  // the stream bytes, as the sender read them
};
// ViewChunk's bytes copied into one buffer (for a chunk kept past its Message).
Result<DecodedChunk> DecodeChunk(const transport::Message& message);
// The bytes of `view` from stream offset `skip` on, copied into one buffer.
std::vector<std::byte> CopyFrom(const ChunkView& view, size_t skip);
// The same bytes in place: `view`'s pieces from stream offset `skip` on (valid
// while the request's memory is).
std::vector<transport::ConstSlice> PiecesFrom(const ChunkView& view, size_t skip);

struct Ack {
  Toward toward = Toward::kTarget;
  uint64_t session = 0;
  uint64_t conn = 0;
  uint64_t written = 0;
};
std::vector<std::byte> EncodeAck(const Ack& ack);
Result<Ack> DecodeAck(const transport::Message& message);

}  // namespace artune::relay
