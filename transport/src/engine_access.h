// What the engine does to the public types and applications cannot: make a Buffer
// over pool memory, and fill a received Message (transport.h keeps these private
// and befriends EngineAccess). Engine code only; never installed.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "artune/transport/transport.h"

namespace artune::transport {

// The allocator's pool implements it: Release gives a Buffer's memory back when the
// Buffer is destroyed (from any thread).
struct Buffer::Owner {
  virtual ~Owner() = default;
  virtual void Release(std::byte* data, size_t size) = 0;
};

namespace internal {

struct EngineAccess {
  using BufferOwner = Buffer::Owner;

  static Buffer MakeBuffer(std::byte* data, size_t size, std::shared_ptr<BufferOwner> owner) {
    return Buffer(data, size, std::move(owner));
  }
  // A received slice, in the sender's order.
  static void AddSlice(Message& message, ConstSlice slice) { message.slices_.push_back(slice); }
  // Storage the message's slices point into; released with the message.
  static void KeepAlive(Message& message, std::shared_ptr<void> storage) {
    message.storage_.push_back(std::move(storage));
  }
  // MessageRecycler's (message_recycler.h). Gives an empty message recycled lists and
  // the recycler they go back to when it ends.
  static void Adopt(Message& message, std::vector<ConstSlice> slices,
                    std::vector<std::shared_ptr<void>> storage,
                    std::shared_ptr<MessageRecycler> recycler) {
    message.slices_ = std::move(slices);
    message.storage_ = std::move(storage);
    message.recycler_ = std::move(recycler);
  }
  // ~Message's, for a message with a recycler: releases its storage, then gives its
  // lists' room back.
  static void Recycle(Message& message);
};

}  // namespace internal
}  // namespace artune::transport
