// A connection's write queue: whatever the kernel takes at each sendmsg (a whole
// batch, part of a buffer, a run across buffers), the bytes reach the socket
// exactly once and in order, and a batch never holds more than kMaxPieces buffers.
// SendPieces, which writes a received chunk's pieces straight to a socket, leaves
// exactly the unwritten rest when the socket fills.
#include "write_queue.h"

#include <sys/socket.h>
#include <unistd.h>

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

// What a Data handler's socket write left goes before what was queued meanwhile,
// also when the queue's front is partly written.
TEST(WriteQueue, PushFrontGoesBeforeEverythingUnwritten) {
  WriteQueue queue;
  const Bytes first = Pattern(100, 1), second = Pattern(50, 2), front = Pattern(30, 3);
  queue.Push(first);
  queue.Push(second);
  iovec pieces[WriteQueue::kMaxPieces];
  ASSERT_EQ(queue.Gather(pieces), 2u);
  queue.Consume(40);  // 40 bytes of `first` are out
  queue.PushFront(front);
  queue.PushFront({});  // dropped
  EXPECT_EQ(queue.bytes(), 30u + 60u + 50u);
  Bytes want(front);
  want.insert(want.end(), first.begin() + 40, first.end());
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(Drain(queue, [](size_t offered) { return offered; }), want);

  WriteQueue empty;  // onto an empty queue: the only buffer
  empty.PushFront(front);
  EXPECT_EQ(Drain(empty, [](size_t offered) { return 7 < offered ? 7 : offered; }), front);
}

// Held pieces (a request's memory, no copy) leave in order between copies, from
// where the socket stopped, and their memory is given back once the last of its
// pieces is out, not before.
TEST(WriteQueue, HeldPiecesKeepTheirMemoryUntilTheLastIsWritten) {
  auto request = std::make_shared<const Bytes>(Pattern(300, 4));
  const std::weak_ptr<const Bytes> watch = request;
  HeldBytes held;
  held.pieces = {std::span(*request).subspan(10, 100), std::span(*request).subspan(200, 100)};
  held.keep = request;
  request.reset();
  WriteQueue queue;
  const Bytes before = Pattern(20, 5), after = Pattern(20, 6);
  queue.Push(before);
  queue.PushHeld(std::move(held));
  queue.Push(after);
  EXPECT_EQ(queue.bytes(), 240u);
  Bytes want(before);
  want.insert(want.end(), watch.lock()->begin() + 10, watch.lock()->begin() + 110);
  want.insert(want.end(), watch.lock()->begin() + 200, watch.lock()->end());
  want.insert(want.end(), after.begin(), after.end());
  // At most 170 bytes per sendmsg: the held pieces leave across calls.
  const Bytes got = Drain(queue, [](size_t offered) { return std::min<size_t>(offered, 170); });
  EXPECT_EQ(got, want);
  EXPECT_TRUE(watch.expired());

  WriteQueue partial;
  auto again = std::make_shared<const Bytes>(Pattern(64, 7));
  const std::weak_ptr<const Bytes> watch_again = again;
  HeldBytes front;
  front.pieces = {std::span(*again).subspan(0, 32), std::span(*again).subspan(32)};
  front.keep = std::move(again);
  partial.PushHeldFront(std::move(front));
  iovec pieces[WriteQueue::kMaxPieces];
  ASSERT_EQ(partial.Gather(pieces), 2u);
  partial.Consume(40);  // the first piece and 8 bytes of the second
  EXPECT_FALSE(watch_again.expired());
  partial.Consume(24);
  EXPECT_TRUE(watch_again.expired());
  EXPECT_TRUE(partial.empty());
}

// Reads what is waiting on `fd` (non-blocking) onto `out`.
void ReadAvailable(int fd, Bytes& out) {
  std::byte buffer[65536];
  for (;;) {
    const ssize_t got = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got <= 0) return;
    out.insert(out.end(), buffer, buffer + got);
  }
}

TEST(SendPieces, AFullSocketTakesAPrefixAndTheRestFollowsExactly) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const int small = 4096;
  setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  std::mt19937 random(7);
  // More pieces than one sendmsg takes, empty ones among them, far more bytes than
  // the socket holds.
  std::vector<Bytes> storage;
  Bytes want;
  for (int i = 0; i < 600; ++i) {
    storage.push_back(Pattern(i % 50 == 0 ? 0 : 1 + random() % 3000, static_cast<uint8_t>(i)));
    want.insert(want.end(), storage.back().begin(), storage.back().end());
  }
  std::vector<std::span<const std::byte>> pieces(storage.begin(), storage.end());
  size_t taken = 0;
  ASSERT_TRUE(SendPieces(fds[0], pieces, taken));
  ASSERT_GT(taken, 0u);
  ASSERT_LT(taken, want.size());  // the socket filled: a prefix went
  Bytes got;
  ReadAvailable(fds[1], got);
  ASSERT_EQ(got, Bytes(want.begin(), want.begin() + static_cast<ptrdiff_t>(taken)));
  // The rest, sent as one queued copy would be, in as many rounds as it takes.
  Bytes rest(want.begin() + static_cast<ptrdiff_t>(taken), want.end());
  for (int round = 0; round < 100'000 && !rest.empty(); ++round) {
    const std::span<const std::byte> piece(rest);
    size_t more = 0;
    ASSERT_TRUE(SendPieces(fds[0], std::span(&piece, 1), more));
    rest.erase(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(more));
    ReadAvailable(fds[1], got);
  }
  EXPECT_TRUE(rest.empty());
  EXPECT_EQ(got, want);
  close(fds[0]);
  close(fds[1]);
}

TEST(SendPieces, EverythingGoesInOrderWhenThereIsRoom) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  // Several sendmsg batches' worth of small pieces (and empty ones), well within
  // what the socket holds.
  std::vector<Bytes> storage;
  Bytes want;
  for (int i = 0; i < 700; ++i) {
    storage.push_back(Pattern(i % 7 == 0 ? 0 : 1 + i % 40, static_cast<uint8_t>(i)));
    want.insert(want.end(), storage.back().begin(), storage.back().end());
  }
  std::vector<std::span<const std::byte>> pieces(storage.begin(), storage.end());
  size_t taken = 0;
  ASSERT_TRUE(SendPieces(fds[0], pieces, taken));
  EXPECT_EQ(taken, want.size());
  Bytes got;
  ReadAvailable(fds[1], got);
  EXPECT_EQ(got, want);
  close(fds[0]);
  close(fds[1]);
}

TEST(SendPieces, ABrokenSocketIsAFailure) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  close(fds[1]);
  const Bytes a = Pattern(10, 1);
  const std::span<const std::byte> piece(a);
  size_t taken = 0;
  EXPECT_FALSE(SendPieces(fds[0], std::span(&piece, 1), taken));
  EXPECT_EQ(taken, 0u);
  close(fds[0]);
}

}  // namespace
}  // namespace artune::relay
