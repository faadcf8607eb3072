// The shm doorbell (fabric/shm/shm_doorbell.h): a ring rung while nobody waits is
// kept for the next wait, every ring is an edge even with earlier rings unread (what
// lets the reader drain only every few sleeps), rings pile up without blocking the
// ringer and a drain empties them, and a dead peer is seen by both ends without a
// signal.
#include <gmock/gmock.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "fabric/shm/shm_doorbell.h"

namespace artune::transport {
namespace {

using fabric::shm::DrainCadence;
using fabric::shm::DrainDoorbell;
using fabric::shm::IsDoorbell;
using fabric::shm::kSleepsPerDrain;
using fabric::shm::kWakeFlags;
using fabric::shm::OpenDoorbellPair;
using fabric::shm::RingDoorbell;
using fabric::shm::RingResult;

// A pair whose reading end ([0]) is watched edge-triggered, as the fabric does.
class DoorbellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = OpenDoorbellPair();
    ASSERT_TRUE(pair.ok()) << pair.status().ToString();
    ends_ = *pair;
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    ASSERT_GE(epoll_, 0);
    epoll_event event{};
    event.events = EPOLLIN | EPOLLET;
    ASSERT_EQ(::epoll_ctl(epoll_, EPOLL_CTL_ADD, ends_[0], &event), 0);
  }
  void TearDown() override {
    for (int fd : {ends_[0], ends_[1], epoll_}) {
      if (fd >= 0) ::close(fd);
    }
  }
  // Wake-ups ready now (never waits).
  int ReadyNow() {
    epoll_event event{};
    return ::epoll_wait(epoll_, &event, 1, 0);
  }
  bool Empty() {
    char byte = 0;
    return ::recv(ends_[0], &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
  }

  std::array<int, 2> ends_{-1, -1};
  int epoll_ = -1;
};

TEST_F(DoorbellTest, ARingWhileNobodyWaitsIsKeptForTheNextWait) {
  EXPECT_EQ(ReadyNow(), 0);
  EXPECT_EQ(RingDoorbell(ends_[1]), RingResult::kRung);
  EXPECT_EQ(ReadyNow(), 1);  // rung before the wait: not lost
  EXPECT_TRUE(DrainDoorbell(ends_[0]));
  EXPECT_TRUE(Empty());
  EXPECT_EQ(ReadyNow(), 0);
  // After a drain, the next ring is a new edge.
  EXPECT_EQ(RingDoorbell(ends_[1]), RingResult::kRung);
  EXPECT_EQ(ReadyNow(), 1);
}

TEST_F(DoorbellTest, EveryRingIsAnEdgeWhileEarlierRingsAreUnread) {
  // The reader drains only every kSleepsPerDrain sleeps: each ring in between must
  // still end its epoll_wait, though the bytes of the earlier ones are unread.
  for (int i = 0; i < 3 * kWakeFlags * kSleepsPerDrain; ++i) {
    ASSERT_EQ(RingDoorbell(ends_[1]), RingResult::kRung) << "ring " << i;
    ASSERT_EQ(ReadyNow(), 1) << "ring " << i << " was not an edge";
    ASSERT_EQ(ReadyNow(), 0) << "ring " << i << " reported twice";
  }
  EXPECT_TRUE(DrainDoorbell(ends_[0]));
  EXPECT_TRUE(Empty());
}

TEST_F(DoorbellTest, TheRingsOfTheSleepsBetweenDrainsFitInTheSocket) {
  ASSERT_EQ(DrainCadence(ends_[0]), kSleepsPerDrain);
  // At most kWakeFlags rings per sleep, plus the flags set before the last drain.
  for (int i = 0; i < kWakeFlags * (kSleepsPerDrain + 1); ++i) {
    ASSERT_EQ(RingDoorbell(ends_[1]), RingResult::kRung) << "ring " << i;
  }
}

TEST(DoorbellCadenceTest, ADoorbellThatHoldsFewRingsIsDrainedAtEverySleep) {
  auto pair = OpenDoorbellPair();
  ASSERT_TRUE(pair.ok());
  const int small = 4096;  // the kernel's floor is about 4.6 KiB: a handful of rings
  ASSERT_EQ(::setsockopt((*pair)[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  EXPECT_EQ(DrainCadence((*pair)[0]), 1);
  EXPECT_EQ(DrainCadence((*pair)[1]), kSleepsPerDrain);
  for (int fd : *pair) ::close(fd);
}

TEST_F(DoorbellTest, ManyRingsPileUpWithoutBlockingAndOneDrainEmptiesThem) {
  // More rings than the socket holds: the ringer is told, never blocked.
  int rung = 0;
  int pending = 0;
  for (int i = 0; i < 100'000; ++i) {
    const RingResult result = RingDoorbell(ends_[1]);
    ASSERT_NE(result, RingResult::kPeerGone) << "ring " << i;
    (result == RingResult::kRung ? rung : pending)++;
  }
  EXPECT_GT(rung, 0);
  EXPECT_GT(pending, 0) << "the socket never filled: the test did not reach its case";
  EXPECT_EQ(ReadyNow(), 1);
  EXPECT_TRUE(DrainDoorbell(ends_[0]));
  EXPECT_TRUE(Empty());
  // Room again: a ring gets through and wakes.
  EXPECT_EQ(ReadyNow(), 0);
  EXPECT_EQ(RingDoorbell(ends_[1]), RingResult::kRung);
  EXPECT_EQ(ReadyNow(), 1);
}

TEST_F(DoorbellTest, ADeadPeerIsSeenByTheDrainAndTheRingWithoutASignal) {
  ASSERT_EQ(RingDoorbell(ends_[1]), RingResult::kRung);
  ::close(ends_[1]);
  ends_[1] = -1;
  EXPECT_EQ(ReadyNow(), 1);               // the close is an edge too
  EXPECT_TRUE(DrainDoorbell(ends_[0]));   // the last ring first...
  EXPECT_FALSE(DrainDoorbell(ends_[0]));  // ...then the end of stream
  // SIGPIPE is not ignored here: a ring that raised it would end the test binary.
  EXPECT_EQ(RingDoorbell(ends_[0]), RingResult::kPeerGone);
}

TEST(DoorbellCheckTest, OnlyAUnixStreamSocketIsADoorbell) {
  auto pair = OpenDoorbellPair();
  ASSERT_TRUE(pair.ok());
  EXPECT_TRUE(IsDoorbell((*pair)[0]));
  const int event = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(event, 0);
  EXPECT_FALSE(IsDoorbell(event));
  int datagrams[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, datagrams), 0);
  EXPECT_FALSE(IsDoorbell(datagrams[0]));
  for (int fd : {(*pair)[0], (*pair)[1], event, datagrams[0], datagrams[1]}) ::close(fd);
}

}  // namespace
}  // namespace artune::transport
