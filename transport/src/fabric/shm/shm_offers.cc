// The shared offer table (shm_offers.h): the owner's slots and the reader's batches.
#include "fabric/shm/shm_offers.h"

namespace artune::transport::fabric::shm {

OfferPublisher::OfferPublisher(OfferTable* table) : table_(table) {
  free_.reserve(kOfferSlots);
  for (uint32_t slot = kOfferSlots; slot > 0; --slot) free_.push_back(slot - 1);
}

std::optional<uint32_t> OfferPublisher::TakeSlot() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void OfferPublisher::Publish(uint32_t slot, uint32_t key, uint64_t addr, uint64_t length) {
  OfferSlot& entry = table_->slots[slot & kOfferSlotMask];
  entry.key.store(key, std::memory_order_relaxed);
  entry.addr.store(addr, std::memory_order_relaxed);
  entry.length.store(length, std::memory_order_relaxed);
  entry.live.store(1, std::memory_order_release);
}

std::optional<uint64_t> OfferPublisher::Withdraw(uint32_t slot) {
  table_->slots[slot & kOfferSlotMask].live.store(0, std::memory_order_relaxed);
  // Pairs with the fence in OfferReader::BeginBatch: either the reader's batch sees
  // the slot dead, or this side sees the batch under way.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint64_t reading = table_->reading.load(std::memory_order_relaxed);
  if ((reading & 1) == 0) {
    free_.push_back(slot);
    return std::nullopt;
  }
  return reading;
}

bool OfferPublisher::Released(uint32_t slot, uint64_t ticket) {
  if (table_->reading.load(std::memory_order_acquire) == ticket) return false;
  free_.push_back(slot);
  return true;
}

bool OfferPublisher::AskForWakeup(uint64_t ticket) {
  table_->revoke_waiting.store(1, std::memory_order_relaxed);
  // Pairs with the fence in OfferReader::EndBatch.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return table_->reading.load(std::memory_order_acquire) != ticket;
}

OfferReader::OfferReader(OfferTable* table) : table_(table) {}

void OfferReader::BeginBatch() {
  ++reading_;  // odd: a batch is under way (each batch has its own value)
  table_->reading.store(reading_, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool OfferReader::EndBatch() {
  ++reading_;  // even
  table_->reading.store(reading_, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (table_->revoke_waiting.load(std::memory_order_relaxed) == 0) return false;
  return table_->revoke_waiting.exchange(0, std::memory_order_acq_rel) != 0;
}

bool OfferReader::Offered(uint32_t key, uint64_t addr, uint64_t length) const {
  // One copy of each word, and only the copies are compared: the owner may change
  // the slot meanwhile.
  const OfferSlot& entry = table_->slots[key & kOfferSlotMask];
  if (entry.live.load(std::memory_order_acquire) != 1) return false;
  const uint32_t offered_key = entry.key.load(std::memory_order_relaxed);
  const uint64_t start = entry.addr.load(std::memory_order_relaxed);
  const uint64_t offered = entry.length.load(std::memory_order_relaxed);
  return offered_key == key && length > 0 && addr >= start && length <= offered &&
         addr - start <= offered - length;
}

}  // namespace artune::transport::fabric::shm
