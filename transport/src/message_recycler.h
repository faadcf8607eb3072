// A connection's received messages without a heap allocation per message: the room
// of a Message's slice and storage lists, and the shared-ownership blocks that hold
// its received Buffers, go back to the connection's recycler when the Message ends
// and serve the next message received on the connection.
//
// Lifetimes: a Message holds its recycler (shared), and so does every storage block
// the recycler made (through RecyclingAllocator), so a Message that outlives its
// connection stays valid and gives its room back to a recycler nobody else uses;
// the recycler ends with the last of them. At most `keep` lists and `keep` blocks are
// kept; what comes back beyond that is freed, so a recycler holds at most what as
// many messages as the connection has in flight hold.
//
// Threading: every method is thread-safe (one mutex, held only to move a pointer
// or a pair of vectors). A Message ends on any thread (the application's); what it
// held is released before the mutex is taken.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "artune/transport/transport.h"

namespace artune::transport::internal {

class MessageRecycler : public std::enable_shared_from_this<MessageRecycler> {
 public:
  // Blocks of this size are recycled; larger requests go to operator new. It holds
  // a shared_ptr<Buffer>'s control block and the Buffer (64 bytes in libstdc++).
  static constexpr size_t kBlockBytes = 128;

  // Made shared (Prepare hands the Message a share of it).
  static std::shared_ptr<MessageRecycler> Create(size_t keep);
  ~MessageRecycler();
  MessageRecycler(const MessageRecycler&) = delete;
  MessageRecycler& operator=(const MessageRecycler&) = delete;

  // Gives `message`, which must be empty, the room of an ended message (if one came
  // back) and makes it come back here when it ends.
  void Prepare(Message& message);
  // `buffer` in shared ownership, for Message storage, in a recycled block.
  std::shared_ptr<Buffer> Hold(Buffer buffer);

  // ~Message's: takes back the (emptied) lists of a message this recycler prepared.
  void TakeBack(std::vector<ConstSlice> slices, std::vector<std::shared_ptr<void>> storage);
  // RecyclingAllocator's.
  void* AllocateBlock(size_t bytes);
  void FreeBlock(void* block, size_t bytes);

 private:
  explicit MessageRecycler(size_t keep);

  struct Lists {
    std::vector<ConstSlice> slices;
    std::vector<std::shared_ptr<void>> storage;
  };
  const size_t keep_;
  std::mutex mutex_;
  std::vector<Lists> lists_;   // capacity keep_, reserved up front
  std::vector<void*> blocks_;  // capacity keep_, reserved up front
};

// The allocator of a recycled storage block (std::allocate_shared's): draws from and
// returns to its recycler, which it keeps alive.
template <typename T>
class RecyclingAllocator {
 public:
  using value_type = T;

  explicit RecyclingAllocator(std::shared_ptr<MessageRecycler> recycler)
      : recycler_(std::move(recycler)) {}
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>& other) : recycler_(other.recycler()) {}

  T* allocate(size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "blocks are operator new's");
    return static_cast<T*>(recycler_->AllocateBlock(n * sizeof(T)));
  }
  void deallocate(T* block, size_t n) { recycler_->FreeBlock(block, n * sizeof(T)); }
  const std::shared_ptr<MessageRecycler>& recycler() const { return recycler_; }

  template <typename U>
  bool operator==(const RecyclingAllocator<U>& other) const {
    return recycler_ == other.recycler();
  }

 private:
  std::shared_ptr<MessageRecycler> recycler_;
};

}  // namespace artune::transport::internal
