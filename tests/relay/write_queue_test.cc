// A connection's write queue: whatever the kernel takes at each sendmsg (a whole
// batch, part of a buffer, a run across buffers), the bytes reach the socket
// exactly once and in order, and a batch never holds more than kMaxPieces buffers.
#include "write_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace artune::relay {
namespace {

using Bytes = std::vector<std::byte>;

Bytes Pattern(size_t size, uint8_t seed) {
  Bytes bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return bytes;
}

// Drains `queue` as a socket that takes at most `take(offered)` bytes per call.
template <typename Take>
Bytes Drain(WriteQueue& queue, Take take) {
  Bytes out;
  for (int calls = 0; !queue.empty() && calls < 1'000'000; ++calls) {
    iovec pieces[WriteQueue::kMaxPieces];
    const size_t count = queue.Gather(pieces);
    EXPECT_GT(count, 0u);
    EXPECT_LE(count, WriteQueue::kMaxPieces);
    size_t offered = 0;
    for (size_t i = 0; i < count; ++i) offered += pieces[i].iov_len;
    const size_t taken = take(offered);
    for (size_t i = 0, left = taken; i < count && left > 0; ++i) {
      const size_t piece = std::min(left, pieces[i].iov_len);
      const auto* base = static_cast<const std::byte*>(pieces[i].iov_base);
      out.insert(out.end(), base, base + piece);
      left -= piece;
    }
    queue.Consume(taken);
  }
  return out;
}

TEST(WriteQueue, EmptyBuffersAreDropped) {
  WriteQueue queue;
  queue.Push({});
  EXPECT_TRUE(queue.empty());
  iovec pieces[WriteQueue::kMaxPieces];
  EXPECT_EQ(queue.Gather(pieces), 0u);
}

TEST(WriteQueue, WholeBatchesLeaveInOrder) {
  WriteQueue queue;
  Bytes want;
  for (uint8_t i = 0; i < 200; ++i) {  // more buffers than one batch holds
    Bytes piece = Pattern(1 + i % 13, i);
    want.insert(want.end(), piece.begin(), piece.end());
    queue.Push(std::move(piece));
  }
  EXPECT_EQ(queue.bytes(), want.size());
  EXPECT_EQ(Drain(queue, [](size_t offered) { return offered; }), want);
  EXPECT_EQ(queue.bytes(), 0u);
}

TEST(WriteQueue, PartialWritesResumeMidBuffer) {
  std::mt19937 random(22);
  for (int trial = 0; trial < 50; ++trial) {
    WriteQueue queue;
    Bytes want;
    for (int i = 0; i < 100; ++i) {
      Bytes piece = Pattern(1 + random() % 5000, static_cast<uint8_t>(random()));
      want.insert(want.end(), piece.begin(), piece.end());
      queue.Push(std::move(piece));
    }
    // The kernel takes 1 byte up to everything offered.
    auto take = [&](size_t offered) { return 1 + random() % offered; };
    EXPECT_EQ(Drain(queue, take), want) << "trial " << trial;
  }
}

TEST(WriteQueue, PushWhileDraining) {
  WriteQueue queue;
  Bytes want, got;
  for (uint8_t round = 0; round < 50; ++round) {
    Bytes piece = Pattern(100 + round, round);
    want.insert(want.end(), piece.begin(), piece.end());
    queue.Push(std::move(piece));
    iovec pieces[WriteQueue::kMaxPieces];
    const size_t count = queue.Gather(pieces);
    ASSERT_GT(count, 0u);
    // Take 37 bytes of the first piece (or all of it): the rest stays queued.
    const size_t taken = std::min<size_t>(37, pieces[0].iov_len);
    const auto* base = static_cast<const std::byte*>(pieces[0].iov_base);
    got.insert(got.end(), base, base + taken);
    queue.Consume(taken);
  }
  Bytes rest = Drain(queue, [](size_t offered) { return offered; });
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace artune::relay
