// What the public headers let an application do with a Buffer and a Message: use
// them, not make them. Filling a Message and wrapping pool memory in a Buffer are
// the engine's (engine_access.h), which still can.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "artune/transport/transport.h"
#include "engine_access.h"

namespace artune::transport {
namespace {

// Concepts check access from outside the class, as an application's code would.
template <typename M>
concept CanAddSlice = requires(M message, ConstSlice slice) {
  message.AddSlice(slice);
};
template <typename M>
concept CanKeepAlive = requires(M message, std::shared_ptr<void> storage) {
  message.KeepAlive(storage);
};
template <typename B>
concept NamesBufferOwner = requires {
  typename B::Owner;
};

static_assert(!CanAddSlice<Message>, "Message::AddSlice is the engine's, not public");
static_assert(!CanKeepAlive<Message>, "Message::KeepAlive is the engine's, not public");
static_assert(!NamesBufferOwner<Buffer>, "Buffer::Owner is the allocator's, not public");
static_assert(!std::is_constructible_v<Buffer, std::byte*, size_t, std::nullptr_t>,
              "only an allocator makes a Buffer over memory");
// What applications do use.
static_assert(std::is_default_constructible_v<Buffer> && std::is_move_constructible_v<Buffer> &&
              !std::is_copy_constructible_v<Buffer>);
static_assert(std::is_default_constructible_v<Message> && std::is_move_constructible_v<Message>);

struct CountingOwner : internal::EngineAccess::BufferOwner {
  void Release(std::byte* data, size_t size) override { released.push_back({data, size}); }
  std::vector<std::pair<std::byte*, size_t>> released;
};

TEST(PublicApiTest, TheEngineFillsAMessageAndItsStorageLivesWithIt) {
  auto storage = std::make_shared<std::vector<std::byte>>(48);
  std::weak_ptr<std::vector<std::byte>> watch = storage;
  {
    Message message;
    internal::EngineAccess::AddSlice(message, ConstSlice(storage->data(), 16));
    internal::EngineAccess::AddSlice(message, ConstSlice(storage->data() + 16, 32));
    internal::EngineAccess::KeepAlive(message, std::move(storage));
    Message moved = std::move(message);
    ASSERT_EQ(moved.slice_count(), 2u);
    EXPECT_EQ(moved.slice(1).size(), 32u);
    EXPECT_EQ(moved.total_bytes(), 48u);
    EXPECT_FALSE(watch.expired()) << "the slices' storage lives while the message does";
  }
  EXPECT_TRUE(watch.expired()) << "the storage goes with the message";
}

TEST(PublicApiTest, AnEngineBufferGivesItsMemoryBackOnceWhenDestroyed) {
  auto owner = std::make_shared<CountingOwner>();
  std::byte block[64];
  {
    Buffer buffer = internal::EngineAccess::MakeBuffer(block, sizeof block, owner);
    Buffer moved = std::move(buffer);
    EXPECT_EQ(moved.data(), block);
    EXPECT_EQ(moved.size(), sizeof block);
    EXPECT_FALSE(buffer) << "a moved-from buffer is empty";  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(owner->released.empty());
  }
  ASSERT_EQ(owner->released.size(), 1u);
  EXPECT_EQ(owner->released[0].first, block);
  EXPECT_EQ(owner->released[0].second, sizeof block);
}

}  // namespace
}  // namespace artune::transport
