// The shm fabric's rings: every read of a shared word is checked against this
// side's own copies (shm_ring.h) before it indexes anything.
#include "fabric/shm/shm_ring.h"

#include <cstring>
#include <string>

namespace artune::transport::fabric::shm {
namespace {

constexpr uint64_t kMask = kRingBytes - 1;

Status Broken(const std::string& what) {
  return Status::ProtocolError("shared-memory ring broken by the peer: " + what +
                               "; dropping the connection");
}

bool KnownKind(uint32_t kind) {
  return kind >= static_cast<uint32_t>(RecordKind::kSend) &&
         kind <= static_cast<uint32_t>(RecordKind::kReadDone);
}

}  // namespace

void CopyIntoRing(std::byte* ring, uint64_t at, const std::byte* from, uint64_t length) {
  const uint64_t offset = at & kMask;
  const uint64_t first = std::min(length, kRingBytes - offset);
  std::memcpy(ring + offset, from, first);
  if (first < length) std::memcpy(ring, from + first, length - first);
}

void CopyFromRing(const std::byte* ring, uint64_t at, std::byte* to, uint64_t length) {
  const uint64_t offset = at & kMask;
  const uint64_t first = std::min(length, kRingBytes - offset);
  std::memcpy(to, ring + offset, first);
  if (first < length) std::memcpy(to + first, ring, length - first);
}

// ---------------------------------------------------------------------------
// Producer.

RingWriter::RingWriter(RingControl* control, std::byte* data) : control_(control), data_(data) {}

Result<uint64_t> RingWriter::Free() {
  const uint64_t tail = control_->tail.load(std::memory_order_acquire);
  // The consumer's tail only moves forward and never passes what was published.
  if (tail < last_tail_ || tail > published_) {
    return Broken("consumer position " + std::to_string(tail) + " outside [" +
                  std::to_string(last_tail_) + ", " + std::to_string(published_) + "]");
  }
  last_tail_ = tail;
  return kRingBytes - (head_ - tail);
}

Result<bool> RingWriter::TryWrite(const RecordHeader& header, std::span<const SgEntry> payload) {
  ARTUNE_ASSIGN_OR_RETURN(const uint64_t free, Free());
  if (RecordBytes(header.length) > free) return false;
  uint64_t at = head_;
  CopyIntoRing(data_, at, reinterpret_cast<const std::byte*>(&header), sizeof(header));
  at += sizeof(header);
  for (const SgEntry& entry : payload) {
    if (entry.length == 0) continue;
    CopyIntoRing(data_, at, entry.addr, entry.length);
    at += entry.length;
  }
  head_ += RecordBytes(header.length);
  return true;
}

bool RingWriter::Publish() {
  if (published_ == head_) return false;
  published_ = head_;
  control_->head.store(head_, std::memory_order_release);
  // Pairs with the fence in RingReader::Sleep: either the consumer sees the new head
  // before it blocks, or this side sees its flag and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (control_->consumer_sleeping.load(std::memory_order_relaxed) == 0) return false;
  return control_->consumer_sleeping.exchange(0, std::memory_order_acq_rel) != 0;
}

Result<uint64_t> RingWriter::AskForRoom() {
  control_->producer_waiting.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return Free();
}

// ---------------------------------------------------------------------------
// Consumer.

RingReader::RingReader(RingControl* control, std::byte* data) : control_(control), data_(data) {}

Result<std::optional<RecordHeader>> RingReader::Peek() {
  const uint64_t head = control_->head.load(std::memory_order_acquire);
  const uint64_t available = head - tail_;  // unsigned: a head behind tail_ is huge
  if (available == 0) return std::optional<RecordHeader>();
  if (available > kRingBytes || available < sizeof(RecordHeader)) {
    return Broken("producer position " + std::to_string(head) + " with this side at " +
                  std::to_string(tail_));
  }
  // One copy of the header, then only the copy is looked at: the peer may change
  // the shared bytes meanwhile.
  RecordHeader header;
  CopyFromRing(data_, tail_, reinterpret_cast<std::byte*>(&header), sizeof(header));
  if (!KnownKind(header.kind)) return Broken("record kind " + std::to_string(header.kind));
  if (header.length > kMaxRecordPayload || RecordBytes(header.length) > available) {
    return Broken("record of " + std::to_string(header.length) + " bytes with " +
                  std::to_string(available) + " published");
  }
  current_bytes_ = RecordBytes(header.length);
  return std::optional<RecordHeader>(header);
}

void RingReader::CopyPayload(uint64_t offset, std::byte* dest, uint64_t length) const {
  CopyFromRing(data_, tail_ + sizeof(RecordHeader) + offset, dest, length);
}

bool RingReader::Consume() {
  tail_ += current_bytes_;
  current_bytes_ = 0;
  control_->tail.store(tail_, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (control_->producer_waiting.load(std::memory_order_relaxed) == 0) return false;
  return control_->producer_waiting.exchange(0, std::memory_order_acq_rel) != 0;
}

bool RingReader::Sleep() {
  control_->consumer_sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return control_->head.load(std::memory_order_acquire) != tail_;
}

void RingReader::Awake() {
  if (control_->consumer_sleeping.load(std::memory_order_relaxed) != 0) {
    control_->consumer_sleeping.store(0, std::memory_order_relaxed);
  }
}

}  // namespace artune::transport::fabric::shm
