// A connection's received messages recycle their lists and storage blocks
// (message_recycler.h): what comes back serves the next message, what is kept is
// bounded, and a message stays valid after its recycler, connection, client and
// server are gone (ASan checks the memory in the sanitizer build).
#include "message_recycler.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "engine_access.h"
#include "engine_fixture.h"
#include "engine_test_util.h"

namespace artune::transport {
namespace {

using internal::EngineAccess;
using internal::MessageRecycler;

// Memory a test Buffer lends; counts the Buffers given back.
struct CountingOwner : EngineAccess::BufferOwner {
  void Release(std::byte*, size_t) override { released.fetch_add(1); }
  std::atomic<int> released{0};
};

class MessageRecyclerTest : public ::testing::Test {
 protected:
  // `message` prepared by `recycler`, with one slice over `bytes` kept in a Buffer.
  void Fill(MessageRecycler& recycler, Message& message, std::byte* bytes, size_t size) {
    recycler.Prepare(message);
    std::shared_ptr<Buffer> storage = recycler.Hold(EngineAccess::MakeBuffer(bytes, size, owner_));
    EngineAccess::AddSlice(message, ConstSlice(storage->data(), storage->size()));
    EngineAccess::KeepAlive(message, std::move(storage));
  }

  std::shared_ptr<CountingOwner> owner_ = std::make_shared<CountingOwner>();
  std::array<std::byte, 64> bytes_{};
};

TEST_F(MessageRecyclerTest, AnEndedMessagesListsServeTheNextMessage) {
  auto recycler = MessageRecycler::Create(4);
  const ConstSlice* first_lists = nullptr;
  {
    Message message;
    Fill(*recycler, message, bytes_.data(), 10);
    first_lists = message.slices().data();
    EXPECT_EQ(owner_->released.load(), 0);
  }
  EXPECT_EQ(owner_->released.load(), 1) << "the message's Buffer went back when it ended";
  Message next;
  recycler->Prepare(next);
  EXPECT_EQ(next.slice_count(), 0u);
  EXPECT_GE(next.slices().capacity(), 1u);
  EXPECT_EQ(next.slices().data(), first_lists) << "not the ended message's list";
}

TEST_F(MessageRecyclerTest, MessagesAliveTogetherHaveTheirOwnListsAndBytes) {
  auto recycler = MessageRecycler::Create(4);
  std::vector<Message> messages(3);
  for (size_t i = 0; i < messages.size(); ++i) {
    Fill(*recycler, messages[i], bytes_.data() + 8 * i, 8);
  }
  // Two come back and serve two new messages while the third lives on.
  const std::array<const ConstSlice*, 2> ended = {messages[0].slices().data(),
                                                  messages[1].slices().data()};
  messages[0] = Message();
  messages[1] = Message();
  Message again_a;
  Message again_b;
  Fill(*recycler, again_a, bytes_.data() + 40, 4);
  Fill(*recycler, again_b, bytes_.data() + 48, 4);
  EXPECT_EQ(messages[2].slice(0).data(), bytes_.data() + 16);
  EXPECT_EQ(again_a.slice(0).data(), bytes_.data() + 40);
  EXPECT_EQ(again_b.slice(0).data(), bytes_.data() + 48);
  EXPECT_NE(again_a.slices().data(), messages[2].slices().data());
  EXPECT_NE(again_b.slices().data(), messages[2].slices().data());
  EXPECT_NE(again_a.slices().data(), again_b.slices().data());
  // The ended ones' lists, newest first.
  EXPECT_EQ(again_a.slices().data(), ended[1]);
  EXPECT_EQ(again_b.slices().data(), ended[0]);
}

TEST_F(MessageRecyclerTest, KeepsAtMostItsBound) {
  auto recycler = MessageRecycler::Create(1);
  {
    Message a;
    Message b;
    Fill(*recycler, a, bytes_.data(), 4);
    Fill(*recycler, b, bytes_.data() + 4, 4);
  }
  Message first;
  Message second;
  recycler->Prepare(first);
  recycler->Prepare(second);
  EXPECT_GE(first.slices().capacity(), 1u);
  EXPECT_EQ(second.slices().capacity(), 0u) << "kept more than one message's lists";
}

TEST_F(MessageRecyclerTest, AMessageOutlivesItsRecycler) {
  Message message;
  {
    auto recycler = MessageRecycler::Create(2);
    Fill(*recycler, message, bytes_.data(), 16);
  }
  EXPECT_EQ(message.slice(0).data(), bytes_.data());
  EXPECT_EQ(message.total_bytes(), 16u);
  Message moved = std::move(message);
  EXPECT_EQ(owner_->released.load(), 0);
  moved = Message();
  EXPECT_EQ(owner_->released.load(), 1);
}

// End to end: responses held together keep their own bytes while later calls run
// on the same connection (each recycled list or block serves one live message).
TEST_P(EngineTest, ResponsesHeldTogetherKeepTheirOwnBytes) {
  config_.max_outstanding = 4;
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  constexpr uint32_t kHeld = 12;  // three times the connection's recycler's bound
  std::vector<std::vector<std::vector<std::byte>>> payloads;
  std::vector<Message> responses;
  for (uint32_t round = 0; round < 3; ++round) {
    for (uint32_t i = 0; i < kHeld; ++i) {
      const uint32_t seed = round * kHeld + i + 1;
      payloads.push_back(testing::MakePayload({100, 3, 64 << 10}, seed));
      Result<Message> response = client_->Call("echo", testing::Views(payloads.back()));
      ASSERT_TRUE(response.ok()) << response.status().ToString();
      responses.push_back(std::move(response).value());
    }
    for (size_t i = 0; i < responses.size(); ++i) {
      EXPECT_TRUE(testing::SameSlices(responses[i], payloads[i])) << "response " << i;
    }
    // Half of them end: their room serves the next round.
    for (size_t i = 0; i < responses.size(); i += 2) responses[i] = Message();
    for (size_t i = 0; i < responses.size(); i += 2) payloads[i].clear();
  }
}

TEST_P(EngineTest, AResponseOutlivesItsClientAndServer) {
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  const auto payload = testing::MakePayload({100, 2 << 20}, 5);
  Result<Message> response = client_->Call("echo", testing::Views(payload));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  client_.reset();
  server_.reset();
  EXPECT_TRUE(testing::SameSlices(*response, payload));
}

}  // namespace
}  // namespace artune::transport
