#include "message_recycler.h"

#include <new>

#include "engine_access.h"

namespace artune::transport {

Message& Message::operator=(Message&& other) noexcept {
  if (this != &other) {
    if (recycler_) internal::EngineAccess::Recycle(*this);
    slices_ = std::move(other.slices_);
    storage_ = std::move(other.storage_);
    recycler_ = std::move(other.recycler_);
  }
  return *this;
}

Message::~Message() {
  if (recycler_) internal::EngineAccess::Recycle(*this);
}

namespace internal {

void EngineAccess::Recycle(Message& message) {
  message.storage_.clear();  // the Buffers go back to their pools first
  message.slices_.clear();
  std::shared_ptr<MessageRecycler> recycler = std::move(message.recycler_);
  recycler->TakeBack(std::move(message.slices_), std::move(message.storage_));
}

std::shared_ptr<MessageRecycler> MessageRecycler::Create(size_t keep) {
  // The constructor is private (only shared instances work); make_shared cannot
  // reach it. One allocation per connection.
  return std::shared_ptr<MessageRecycler>(new MessageRecycler(keep));
}

MessageRecycler::MessageRecycler(size_t keep) : keep_(keep) {
  lists_.reserve(keep_);
  blocks_.reserve(keep_);
}

MessageRecycler::~MessageRecycler() {
  for (void* block : blocks_) ::operator delete(block);
}

void MessageRecycler::Prepare(Message& message) {
  Lists lists;
  {
    std::lock_guard lock(mutex_);
    if (!lists_.empty()) {
      lists = std::move(lists_.back());
      lists_.pop_back();
    }
  }
  EngineAccess::Adopt(message, std::move(lists.slices), std::move(lists.storage),
                      shared_from_this());
}

std::shared_ptr<Buffer> MessageRecycler::Hold(Buffer buffer) {
  return std::allocate_shared<Buffer>(RecyclingAllocator<Buffer>(shared_from_this()),
                                      std::move(buffer));
}

void MessageRecycler::TakeBack(std::vector<ConstSlice> slices,
                               std::vector<std::shared_ptr<void>> storage) {
  std::lock_guard lock(mutex_);
  // Lists that never grew save nothing; beyond keep_ they are freed (after the lock).
  if (lists_.size() < keep_ && slices.capacity() + storage.capacity() > 0) {
    lists_.push_back(Lists{std::move(slices), std::move(storage)});
  }
}

void* MessageRecycler::AllocateBlock(size_t bytes) {
  if (bytes <= kBlockBytes) {
    std::lock_guard lock(mutex_);
    if (!blocks_.empty()) {
      void* block = blocks_.back();
      blocks_.pop_back();
      return block;
    }
  }
  return ::operator new(bytes <= kBlockBytes ? kBlockBytes : bytes);
}

void MessageRecycler::FreeBlock(void* block, size_t bytes) {
  if (bytes <= kBlockBytes) {
    std::lock_guard lock(mutex_);
    if (blocks_.size() < keep_) {
      blocks_.push_back(block);
      return;
    }
  }
  ::operator delete(block);
}

}  // namespace internal
}  // namespace artune::transport
