// The embedded transport's wire format and call states, in one versioned header.
//
// Two layers travel on a data connection:
//   * engine packets: what the protocol layer puts into two-sided sends. They are
//     the same on every fabric (tcp today, verbs later), and each one fits in one
//     pre-posted eager receive buffer (EagerBufferBytes of the connection).
//   * TCP frames: how the tcp fabric carries two-sided sends and emulates one-sided
//     reads on a byte stream. Only transport/src/fabric/tcp/ uses them.
//
// All integers are little-endian (the only byte order artune runs on; checked
// below), structs are packed by construction (explicit sizes, explicit padding,
// static_asserts), and every length read from the wire is checked against a limit
// before anything is allocated or copied.
//
// Changing anything here changes kWireVersion: the control-plane handshake refuses
// peers of another version.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace artune::transport::wire {

static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");

// 2: ConnectParams carries the data ticket; read refusals are one status.
// 3: one-way requests (kFlagOneWay) and their call slots returned in batches
//    (PacketHeader::oneway_done).
inline constexpr uint32_t kWireVersion = 3;

// ---------------------------------------------------------------------------
// Limits (a peer that exceeds one is dropped with kProtocolError).

inline constexpr uint32_t kMaxMethodBytes = 255;
inline constexpr size_t kDataTicketBytes = 16;
inline constexpr uint32_t kMaxSlicesPerMessage = 1u << 16;
inline constexpr uint64_t kMaxSliceBytes = uint64_t{1} << 30;    // 1 GiB
inline constexpr uint64_t kMaxMessageBytes = uint64_t{4} << 30;  // 4 GiB
inline constexpr uint32_t kMaxErrorMessageBytes = 512;
// Rendezvous chunks are at least this long, or the whole slice when it is shorter:
// this bounds the reads in flight per offered byte (the tcp fabric relies on it).
inline constexpr uint64_t kMinChunkBytes = 4096;

// ---------------------------------------------------------------------------
// Engine packets (inside two-sided sends, every fabric).

enum class PacketKind : uint8_t {
  kEager = 1,           // one slice's bytes follow the entry table
  kCoalescedEager = 2,  // several slices' bytes, packed in entry order
  kAnnounce = 3,        // rendezvous: entries name (addr, rkey, length) to read
  kFin = 4,             // the receiver has read every announced slice: release them
  kError = 5,           // the call failed; the payload is the error message
  kCredit = 6,          // returns receive credits only
};
std::string_view PacketKindName(PacketKind kind);

enum class Direction : uint8_t { kRequest = 0, kResponse = 1 };

// Flags of PacketHeader::flags.
inline constexpr uint8_t kFlagSpareCreditReturned = 1;  // see Connection's credit rules
// A request's packets: the client expects no response (CallOptions::one_way). The
// server runs the handler, sends nothing back for the call and counts it in
// oneway_done once it is over.
inline constexpr uint8_t kFlagOneWay = 2;
// A kCredit packet sent on one of the regular credits, not the spare: a server's
// report of one-way calls handled (oneway_done) when the spare is out.
inline constexpr uint8_t kFlagCreditOnRegular = 4;

struct PacketHeader {
  uint8_t kind;               // PacketKind
  uint8_t direction;          // Direction of the message this packet belongs to
  uint8_t flags;              // kFlag*
  uint8_t method_bytes;       // request, first packet of the message: method name length
  uint32_t entry_count;       // SliceEntry / RendezvousEntry records after the header
  uint64_t call_id;           // chosen by the client, unique per connection
  uint32_t slice_count;       // total slices of the message (every packet repeats it)
  uint32_t payload_bytes;     // bytes after the entry table: method name, then data or error text
  uint32_t credits_returned;  // receive buffers the sender re-posted since its last packet
  int32_t status_code;        // kError: the ErrorCode
  uint32_t config_epoch;      // sender's config epoch (a response with a newer one makes the
                              // client refresh its config through the control plane)
  uint32_t oneway_done;       // server: one-way calls it finished since its last packet
                              // (their call slots, returned like credits)
};
static_assert(sizeof(PacketHeader) == 40);

// One eager slice in a kEager / kCoalescedEager packet; its bytes follow in order.
struct SliceEntry {
  uint32_t slice_index;
  uint32_t length;
};
static_assert(sizeof(SliceEntry) == 8);

// One rendezvous slice in a kAnnounce packet.
struct RendezvousEntry {
  uint32_t slice_index;
  uint32_t rkey;
  uint64_t remote_addr;
  uint64_t length;
  uint64_t chunk_bytes;  // the sender's chunk_size for this slice (== length: one read)
};
static_assert(sizeof(RendezvousEntry) == 32);

// Private data a client sends with its fabric connect request (rdma_cm style): the
// geometry of the eager buffers both ends post, from the negotiated config.
struct ConnectParams {
  uint32_t wire_version;
  uint32_t eager_buffer_count;
  uint64_t eager_buffer_bytes;
  uint32_t max_outstanding;
  uint32_t config_epoch;
  // The one-time ticket of an authenticated control-plane handshake
  // (HandshakeResponse.data_ticket): the server admits no data connection without.
  uint8_t ticket[kDataTicketBytes];
};
static_assert(sizeof(ConnectParams) == 40);  // rdma_cm's RC private data holds 56
inline constexpr uint64_t kMaxEagerBufferBytes = (uint64_t{1} << 20) + 4096;
inline constexpr uint32_t kMaxEagerBufferCount = 4096;

// ---------------------------------------------------------------------------
// TCP frames (transport/src/fabric/tcp only).

inline constexpr uint16_t kTcpMagic = 0xA7CE;

enum class FrameKind : uint8_t {
  kHello = 1,         // first frame of a connection; body: private data (<= kMaxHelloBytes)
  kSend = 2,          // two-sided send; body lands in the next posted receive buffer
  kReadRequest = 3,   // body: ReadRequestBody; id: the reader's request id
  kReadResponse = 4,  // body: the bytes read (exactly the requested length) or empty
                      // with a non-zero status; id: the request id
};
std::string_view FrameKindName(FrameKind kind);

struct FrameHeader {
  uint16_t magic;   // kTcpMagic
  uint8_t version;  // kWireVersion (low byte)
  uint8_t kind;     // FrameKind
  uint32_t status;  // kReadResponse: 0 ok, else ReadStatus
  uint64_t body_bytes;
  uint64_t id;
};
static_assert(sizeof(FrameHeader) == 24);

struct ReadRequestBody {
  uint64_t remote_addr;
  uint64_t length;
  uint32_t rkey;
  uint32_t reserved;
};
static_assert(sizeof(ReadRequestBody) == 24);

// One refusal for every read that was not offered (unknown or revoked key, a key
// of another connection, a range outside the offer), so a peer learns nothing
// about which. Version-1 peers sent 1 or 2 for "unknown key"/"out of bounds";
// any non-zero status is a refusal.
enum class ReadStatus : uint32_t {
  kOk = 0,
  kRefused = 1,
};

inline constexpr uint64_t kMaxHelloBytes = 256;

// Read responses one connection may have queued and not yet written, beyond one
// per kMinChunkBytes (at least one) of each offer it has: a peer past that has
// more reads in flight than the engine ever asks for and is dropped
// (TcpEndpoint::ServeReadRequest says why the bound is safe).
inline constexpr uint64_t kReadResponsesBeyondOffers = 8192;

// ---------------------------------------------------------------------------
// Call states, listed once. Every change goes through Connection::Transition, which
// checks it against IsAllowedTransition and debug-logs it (ARTUNE_TRANSPORT_DEBUG=1).
//
// Client side:  kSending -> kAwaitingResponse -> kReceivingResponse -> kDone
// Server side:  kReceivingRequest -> kHandling -> kSending -> kAwaitingFin -> kDone
// From any live state: -> kFailed (error, connection lost) or, on the client,
// -> kAbandoned (timed out; kept until its pending reads and FIN drain) -> kDone.
enum class CallState : uint8_t {
  kReceivingRequest,   // server: request packets / reads still arriving
  kHandling,           // server: handler running on a worker
  kSending,            // request (client) or response (server) packets being posted
  kAwaitingResponse,   // client: request sent
  kReceivingResponse,  // client: response announced, reads in flight
  kAwaitingFin,        // server: response sent, peer still reading its rendezvous slices
  kAbandoned,          // client: timed out; the user got kTimeout; draining
  kFailed,             // the call failed; resources released once reads drain
  kDone,               // finished; the record is erased
};
std::string_view CallStateName(CallState state);
bool IsAllowedTransition(CallState from, CallState to);

}  // namespace artune::transport::wire
