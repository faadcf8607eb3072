// The relays' Data requests: a chunk's bytes come back exactly from the head slice
// and one payload slice per message; a malformed request is refused, not guessed.
#include "relay_wire.h"

#include "engine_access.h"  // a test double of the engine's allocator and messages

#include <gtest/gtest.h>

#include <random>

namespace artune::relay {
namespace {

using Bytes = std::vector<std::byte>;

// Heap memory as "registered" buffers; refuses past `limit` bytes per buffer.
using transport::internal::EngineAccess;

class HeapAllocator : public transport::Allocator, public EngineAccess::BufferOwner {
 public:
  explicit HeapAllocator(size_t limit) : limit_(limit) {}
  Result<transport::Buffer> Allocate(size_t size) override {
    if (size == 0 || size > limit_) return Status::ResourceExhausted("test limit");
    return EngineAccess::MakeBuffer(new std::byte[size], size, self_);
  }
  void Release(std::byte* data, size_t) override { delete[] data; }
  std::shared_ptr<EngineAccess::BufferOwner> self_{this, [](EngineAccess::BufferOwner*) {}};

 private:
  size_t limit_;
};

transport::Message AsMessage(const Chunk& chunk) {
  transport::Message message;
  for (const auto& slice : chunk.slices) EngineAccess::AddSlice(message, slice);
  return message;
}

TEST(RelayWireTest, ChunkRoundTripsWithOneSlicePerMessage) {
  Bytes bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 13);
  // literal, message 5, literal, message 6, message 5 again, literal.
  const std::vector<ByteRun> runs = {{10, 0}, {300, 5}, {9, 0}, {200, 6}, {400, 5}, {81, 0}};
  for (size_t limit : {size_t{1} << 20, size_t{250}}) {  // allocator takes all / some
    HeapAllocator allocator(limit);
    const DataHeader header{Toward::kOrigin, kFlagFin, 77, 9, 3};
    auto chunk = BuildChunk(header, bytes, runs, allocator);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    ASSERT_EQ(chunk->slices.size(), 3u);  // head + two messages
    EXPECT_EQ(chunk->slices[1].size(), 700u);
    EXPECT_EQ(chunk->slices[2].size(), 200u);
    auto decoded = DecodeChunk(AsMessage(*chunk));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->bytes, bytes);
    EXPECT_EQ(decoded->header.toward, Toward::kOrigin);
    EXPECT_EQ(decoded->header.flags, kFlagFin);
    EXPECT_EQ(decoded->header.session, 77u);
    EXPECT_EQ(decoded->header.conn, 9u);
    EXPECT_EQ(decoded->header.seq, 3u);
  }
}

// The receiver's view reads the stream bytes in place: pieces inside the request's
// slices, in stream order; any tail of them copies out exactly.
TEST(RelayWireTest, ViewReadsTheBytesInPlace) {
  Bytes bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + 1);
  const std::vector<ByteRun> runs = {{10, 0}, {300, 5}, {9, 0}, {200, 6}, {400, 5}, {81, 0}};
  HeapAllocator allocator(1 << 20);
  auto chunk = BuildChunk({Toward::kTarget, 0, 1, 2, 3}, bytes, runs, allocator);
  ASSERT_TRUE(chunk.ok());
  const transport::Message message = AsMessage(*chunk);
  auto view = ViewChunk(message);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->bytes, bytes.size());
  EXPECT_EQ(view->header.seq, 3u);
  ASSERT_EQ(view->pieces.size(), runs.size());
  Bytes joined;
  for (const transport::ConstSlice& piece : view->pieces) {
    bool inside = false;
    for (const transport::ConstSlice& slice : message.slices()) {
      inside |= piece.data() >= slice.data() &&
                piece.data() + piece.size() <= slice.data() + slice.size();
    }
    EXPECT_TRUE(inside) << "a piece outside the request's memory";
    joined.insert(joined.end(), piece.begin(), piece.end());
  }
  EXPECT_EQ(joined, bytes);
  for (size_t skip :
       {size_t{0}, size_t{1}, size_t{10}, size_t{11}, size_t{519}, size_t{999}, size_t{1000}}) {
    EXPECT_EQ(CopyFrom(*view, skip),
              Bytes(bytes.begin() + static_cast<ptrdiff_t>(skip), bytes.end()))
        << "skip " << skip;
  }
}

// A message whose bytes in the chunk are one long run is sent from the read
// buffer itself; one in several runs, or short, is gathered; the bytes come back
// exact either way.
TEST(RelayWireTest, LongSingleRunsAreSentInPlace) {
  Bytes bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 11 + 3);
  // message 1: one run of 2000 (in place); message 2: two runs of 900 (gathered);
  // message 3: one run of 100 (short: gathered).
  const std::vector<ByteRun> runs = {{9, 0},   {2000, 1}, {9, 0},   {900, 2}, {9, 0},
                                     {900, 2}, {9, 0},    {100, 3}, {1064, 0}};
  HeapAllocator allocator(1 << 20);
  auto chunk = BuildChunk({}, bytes, runs, allocator, /*in_place_min=*/1000);
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_TRUE(chunk->in_place);
  ASSERT_EQ(chunk->slices.size(), 4u);
  EXPECT_EQ(chunk->slices[1].data(), bytes.data() + 9);
  EXPECT_EQ(chunk->slices[1].size(), 2000u);
  for (size_t slot : {size_t{2}, size_t{3}}) {
    const bool inside = chunk->slices[slot].data() >= bytes.data() &&
                        chunk->slices[slot].data() < bytes.data() + bytes.size();
    EXPECT_FALSE(inside) << "slice " << slot << " should be a gathered copy";
  }
  auto decoded = DecodeChunk(AsMessage(*chunk));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->bytes, bytes);
  // Without in_place_min nothing points into the read buffer.
  auto gathered = BuildChunk({}, bytes, runs, allocator);
  ASSERT_TRUE(gathered.ok());
  EXPECT_FALSE(gathered->in_place);
  EXPECT_NE(gathered->slices[1].data(), bytes.data() + 9);
  EXPECT_EQ(DecodeChunk(AsMessage(*gathered))->bytes, bytes);
}

TEST(RelayWireTest, RunsThatMissBytesAreRefused) {
  HeapAllocator allocator(1 << 20);
  const Bytes bytes(10);
  EXPECT_EQ(BuildChunk({}, bytes, {{9, 0}}, allocator).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(RelayWireTest, MalformedRequestsAreProtocolErrors) {
  HeapAllocator allocator(1 << 20);
  const Bytes bytes(100, std::byte{1});
  auto chunk = BuildChunk({}, bytes, {{20, 0}, {80, 1}}, allocator);
  ASSERT_TRUE(chunk.ok());
  // A payload slice shorter than the table says.
  transport::Message short_payload;
  EngineAccess::AddSlice(short_payload, chunk->slices[0]);
  EngineAccess::AddSlice(short_payload, chunk->slices[1].first(79));
  EXPECT_EQ(DecodeChunk(short_payload).status().code(), ErrorCode::kProtocolError);
  // A missing payload slice.
  transport::Message missing;
  EngineAccess::AddSlice(missing, chunk->slices[0]);
  EXPECT_EQ(DecodeChunk(missing).status().code(), ErrorCode::kProtocolError);
  // Random damage to the head never crashes and never yields other bytes silently
  // of another length.
  std::mt19937 random(5);
  for (int round = 0; round < 500; ++round) {
    Bytes head(chunk->slices[0].begin(), chunk->slices[0].end());
    head[random() % head.size()] = static_cast<std::byte>(random());
    if (round % 3 == 0) head.resize(random() % head.size());
    transport::Message damaged;
    EngineAccess::AddSlice(damaged, head);
    EngineAccess::AddSlice(damaged, chunk->slices[1]);
    auto decoded = DecodeChunk(damaged);
    if (decoded.ok()) {
      EXPECT_EQ(decoded->bytes.size(), 100u);
    }
  }
}

TEST(RelayWireTest, OpenAndAckRoundTrip) {
  const OpenRequest open{1, 2, "10.0.0.1:4000", "10.0.0.2", 50051};
  Bytes encoded = EncodeOpen(open);
  transport::Message message;
  EngineAccess::AddSlice(message, encoded);
  auto decoded = DecodeOpen(message);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->origin_address, "10.0.0.1:4000");
  EXPECT_EQ(decoded->host, "10.0.0.2");
  EXPECT_EQ(decoded->port, 50051);
  encoded.pop_back();
  transport::Message truncated;
  EngineAccess::AddSlice(truncated, encoded);
  EXPECT_FALSE(DecodeOpen(truncated).ok());

  Bytes ack = EncodeAck({Toward::kTarget, 3, 4, 5000});
  transport::Message ack_message;
  EngineAccess::AddSlice(ack_message, ack);
  auto decoded_ack = DecodeAck(ack_message);
  ASSERT_TRUE(decoded_ack.ok());
  EXPECT_EQ(decoded_ack->written, 5000u);
  EXPECT_EQ(decoded_ack->toward, Toward::kTarget);
}

}  // namespace
}  // namespace artune::relay
