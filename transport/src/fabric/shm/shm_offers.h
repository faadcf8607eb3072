// Offers published in the shared segment, so that a reader with ptrace rights over
// the owner reads an offered range with process_vm_readv without asking first: no
// grant round trip through the rings per read, and no thread of the owner on the
// read's path (UCX's cma reads the same way, from the rkey it was sent).
//
//   table     one per direction, after the rings (shm_ring.h): kOfferSlots slots
//             written by the owner only (live, key, addr, length), one word written
//             by the reader only (`reading`, odd while a batch of reads is under
//             way) and one the owner sets and the reader clears when it wakes it
//             (`revoke_waiting`). A key's low bits name its slot.
//   publish   Expose writes the slot, then marks it live (release); the announce
//             that names the key goes through the ring after it (release/acquire on
//             the ring's head), so the reader sees the slot before it reads.
//   read      the reader makes `reading` odd and fences, copies the slot once and
//             checks its own request against the copy (same key, range inside);
//             then reads; then makes `reading` even. A request that does not match
//             goes the old way (kReadRequest), which refuses what is not offered:
//             the table only ever saves a round trip, it never grants more.
//   revoke    the owner clears `live`, fences and reads `reading`: even, and no
//             read can be under way nor start (a batch that starts now sees the slot
//             dead), so the memory is released at once; odd, and the release waits
//             until `reading` moves on (the batch that may have seen the slot live
//             is over). Dekker-style, as the rings' wake-ups: both sides fence
//             between their store and their load.
//   trust     the owner takes one thing from the table, `reading`, and only
//             compares it for equality: a reader that lies about it only delays the
//             release of its own offers until the connection ends (teardown
//             releases everything), as a reader that never answers kReadDone does.
//             The reader copies a slot once and checks its own request against the
//             copy: a lying owner can only make it read other bytes of the owner's
//             own memory into the buffer the reader chose, of the length it chose.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace artune::transport::fabric::shm {

// Slots per direction: a power of two (a key's low bits name its slot), room for
// the offers of many calls in flight (each rendezvous slice is one offer). Offers
// beyond it go unpublished and are read the old way.
inline constexpr uint32_t kOfferSlots = 1024;
static_assert((kOfferSlots & (kOfferSlots - 1)) == 0);
inline constexpr uint32_t kOfferSlotMask = kOfferSlots - 1;

struct OfferSlot {
  std::atomic<uint32_t> live;
  std::atomic<uint32_t> key;
  std::atomic<uint64_t> addr;
  std::atomic<uint64_t> length;
  uint64_t reserved;
};
static_assert(sizeof(OfferSlot) == 32);

struct alignas(64) OfferTable {
  alignas(64) std::atomic<uint64_t> reading;         // the reader's
  alignas(64) std::atomic<uint32_t> revoke_waiting;  // set by the owner
  alignas(64) OfferSlot slots[kOfferSlots];          // the owner's
};

// The owner's end of one table. Not thread-safe: the endpoint's offers mutex guards
// it.
class OfferPublisher {
 public:
  OfferPublisher() = default;
  explicit OfferPublisher(OfferTable* table);

  // A free slot, or nullopt when every one is in use (the offer goes unpublished).
  std::optional<uint32_t> TakeSlot();
  // Makes [addr, addr + length) readable under `key`, whose low bits are `slot`'s.
  void Publish(uint32_t slot, uint32_t key, uint64_t addr, uint64_t length);
  // Withdraws the slot's offer. nullopt: no read of it can be under way, the slot is
  // free again. A ticket: a batch of the reader's may have seen it live; pass the
  // ticket to Released until it says the batch is over.
  std::optional<uint64_t> Withdraw(uint32_t slot);
  // True (and the slot is free again) once the reader's `reading` moved past
  // `ticket`.
  bool Released(uint32_t slot, uint64_t ticket);
  // Before the owner's progress thread blocks with withdrawals pending: asks the
  // reader to wake it when its batch ends. True if `ticket` is already released
  // (then do not block).
  bool AskForWakeup(uint64_t ticket);

 private:
  OfferTable* table_ = nullptr;
  std::vector<uint32_t> free_;
};

// The reader's end of one table. Progress thread only.
class OfferReader {
 public:
  OfferReader() = default;
  explicit OfferReader(OfferTable* table);

  // Brackets a batch of reads: between the two, the owner releases nothing that
  // Offered said yes to. EndBatch returns true when the owner asked to be woken.
  void BeginBatch();
  bool EndBatch();
  // Whether the owner publishes [addr, addr + length) under `key` (inside a batch).
  bool Offered(uint32_t key, uint64_t addr, uint64_t length) const;

 private:
  OfferTable* table_ = nullptr;
  uint64_t reading_ = 0;  // own copy: the shared word is only ever written
};

}  // namespace artune::transport::fabric::shm
