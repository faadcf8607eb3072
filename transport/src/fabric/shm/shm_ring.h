// The shm fabric's shared segment: two single-producer/single-consumer byte rings,
// one per direction, in one sealed memfd that both processes map.
//
//   segment   SegmentControl (the two rings' control words, each on its own cache
//             line) followed by the two rings' data areas, kRingBytes each, and the
//             two directions' offer tables (shm_offers.h). The
//             geometry is a compile-time constant: neither side ever takes a size,
//             offset or index from the shared memory without checking it against
//             its own copy, so a peer that scribbles on the segment can corrupt only
//             the bytes it sends (the layer above validates those) or break the
//             connection (kProtocolError), never this side's memory.
//   records   RecordHeader then `length` payload bytes, padded to 8. A record may
//             wrap around the end of the ring (copied in two pieces), and is
//             published whole: the producer moves `head` past it only after writing.
//   wake-ups  A consumer about to block sets `consumer_sleeping`; a producer that
//             published swaps it to 0 and, if it was set, writes the consumer's
//             doorbell (Dekker-style, with full fences on both sides). A producer that
//             found the ring full sets `producer_waiting`; the consumer that freed
//             room swaps it and rings the producer's doorbell.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "artune/status.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_offers.h"

namespace artune::transport::fabric::shm {

// Bytes of one direction's ring: a power of two, room for several of the largest
// eager messages (wire::kMaxEagerBufferBytes) so a full ring is rare.
inline constexpr uint64_t kRingBytes = uint64_t{4} << 20;
static_assert((kRingBytes & (kRingBytes - 1)) == 0);
// The largest payload of one record: bigger messages do not fit any receive buffer.
inline constexpr uint64_t kMaxRecordPayload = uint64_t{2} << 20;

enum class RecordKind : uint32_t {
  kSend = 1,         // two-sided message; payload: the message
  kReadRequest = 2,  // reader -> owner; payload: ReadRequestBody; id: the reader's
  kReadGrant = 3,    // owner -> reader: the range is offered, read it yourself
  kReadData = 4,     // owner -> reader: the next bytes of a read (owner-side copy)
  kReadRefused = 5,  // owner -> reader: not offered (one status, whatever the reason)
  kReadDone = 6,     // reader -> owner: the granted read is over
};

struct RecordHeader {
  uint32_t kind = 0;
  uint32_t reserved = 0;
  uint64_t id = 0;
  uint64_t length = 0;  // payload bytes
};
static_assert(sizeof(RecordHeader) == 24);

enum class ReadMode : uint32_t {
  kGrant = 0,  // reply kReadGrant; the reader copies with process_vm_readv
  kCopy = 1,   // reply kReadData records; the owner copies through the ring
};

struct ReadRequestBody {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t key = 0;
  uint32_t mode = 0;  // ReadMode
};

struct alignas(64) RingControl {
  alignas(64) std::atomic<uint64_t> head;  // written by the producer only
  alignas(64) std::atomic<uint64_t> tail;  // written by the consumer only
  alignas(64) std::atomic<uint32_t> consumer_sleeping;
  alignas(64) std::atomic<uint32_t> producer_waiting;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

struct SegmentControl {
  RingControl rings[2];  // [0]: client -> server, [1]: server -> client
};

inline constexpr uint64_t kDataOffset = sizeof(SegmentControl);
// [0]: the client's offers (the server reads them), [1]: the server's.
inline constexpr uint64_t kOfferTablesOffset = kDataOffset + 2 * kRingBytes;
static_assert(kOfferTablesOffset % alignof(OfferTable) == 0);
inline constexpr uint64_t kSegmentBytes = kOfferTablesOffset + 2 * sizeof(OfferTable);

// Bytes a record with `payload` bytes takes in the ring.
constexpr uint64_t RecordBytes(uint64_t payload) {
  return sizeof(RecordHeader) + ((payload + 7) & ~uint64_t{7});
}

// The producing end of one ring. Not thread-safe: the endpoint's send mutex guards it.
class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(RingControl* control, std::byte* data);

  // Writes one record if it fits. false: not enough room now. kProtocolError: the
  // peer's tail is impossible (behind an earlier one, or ahead of head).
  Result<bool> TryWrite(const RecordHeader& header, std::span<const SgEntry> payload);
  // Bytes free now (validated as TryWrite does).
  Result<uint64_t> Free();
  // Publishes what TryWrite wrote; true when the consumer asked to be woken.
  bool Publish();
  // The ring was found full: asks the consumer to wake this side when it frees room.
  // Returns the room free after asking (a consumer may have freed it in between).
  Result<uint64_t> AskForRoom();

 private:
  RingControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  uint64_t head_ = 0;       // own copy; the shared one is only ever written
  uint64_t published_ = 0;  // head_ as last stored to the shared word
  uint64_t last_tail_ = 0;  // the peer's tail as last seen: it must never go back
};

// The consuming end of one ring. Progress thread only.
class RingReader {
 public:
  RingReader() = default;
  RingReader(RingControl* control, std::byte* data);

  // The next record's header, validated (kind known, length within the limit and
  // within what was published), or nullopt when the ring is empty.
  Result<std::optional<RecordHeader>> Peek();
  // Copies bytes [offset, offset + length) of the current record's payload, which
  // the caller keeps within the header's length.
  void CopyPayload(uint64_t offset, std::byte* dest, uint64_t length) const;
  // Drops the current record; true when the producer asked to be woken for room.
  bool Consume();
  // Before blocking: asks the producer for a wake-up; true if data arrived meanwhile.
  bool Sleep();
  void Awake();

 private:
  RingControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  uint64_t tail_ = 0;  // own copy
  uint64_t current_bytes_ = 0;
};

// Copies between a linear buffer and the ring's data area at position `at`
// (wrapping): the only places that index the data area.
void CopyIntoRing(std::byte* ring, uint64_t at, const std::byte* from, uint64_t length);
void CopyFromRing(const std::byte* ring, uint64_t at, std::byte* to, uint64_t length);

}  // namespace artune::transport::fabric::shm
