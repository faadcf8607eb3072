// The doorbell of a shm connection: how one side wakes the other's progress thread
// (or a caller asleep in its epoll) after publishing to a ring (shm_ring.h says
// when a wake-up is owed).
//
// A connected AF_UNIX stream socketpair, one end per side. A socket and not an
// eventfd because a socket's write wakes the reader with the scheduler's sync hint
// (WF_SYNC), which lets the wakee be placed on the waker's CPU; not a pipe because
// send(MSG_NOSIGNAL) to a dead peer fails with EPIPE where a pipe's write raises
// SIGPIPE in the application. Per side one descriptor, as one eventfd was.
//
// The reader watches its end edge-triggered: each ring is one wake-up (epoll
// reports every ring as an edge of its own, also while earlier rings are unread),
// and rings that come while nobody waits are kept by the socket until the next
// epoll_wait. Ringing never blocks: a full socket means the peer has not read
// rings it was woken by (never the case with this reader: see Draining).
//
// Draining: reading the rings is not needed for the wake-up itself, and a recv per
// wake-up costs as much as the send (bench/side-by-side.md, 2026-11-27 23:20), so
// the reader drains only every kSleepsPerDrain sleeps, before it asks for the next
// wake-up (DrainCadence). That is safe because a peer rings only when it takes a
// wake-up flag this side set before sleeping (shm_ring.h, shm_offers.h): at most
// kWakeFlags rings per sleep, so between drains the socket holds a few dozen
// rings, far below what a doorbell opened here holds (kDoorbellSendBuffer). An end
// that holds fewer (a peer that shrank its buffer) is drained at every sleep. A
// peer that rings at will fills only its own connection's doorbell: its wake-ups
// to this side are then lost, as if it never rang.
//
// Threading: Ring may be called from any thread; Drain and DrainCadence from the
// one thread that reads the end (the shm progress pass). Errors: none are reported
// but the peer's end of the connection.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "artune/status.h"

namespace artune::transport::fabric::shm {

// Send buffer asked for on both ends of a pair (the kernel doubles it and caps it
// at net.core.wmem_max): room for about 170 one-byte rings on x86-64.
inline constexpr int kDoorbellSendBuffer = 64 * 1024;
// Wake-up flags a side sets before it sleeps: the inbound ring's consumer_sleeping,
// the outbound ring's producer_waiting and the offer table's revoke_waiting.
inline constexpr int kWakeFlags = 3;
// Sleeps between drains where the doorbell holds enough rings.
inline constexpr int kSleepsPerDrain = 8;

// A connected pair, non-blocking and close-on-exec: [0] for this side, [1] for
// the peer. The caller owns both descriptors.
Result<std::array<int, 2>> OpenDoorbellPair();

// True if `fd` is a unix stream socket (checks a doorbell received from a peer).
bool IsDoorbell(int fd);

enum class RingResult {
  kRung,      // a wake-up is on its way
  kPending,   // the socket is full: the peer has unread wake-ups already
  kPeerGone,  // the peer's end is closed
};
// Wakes the peer. Never blocks, never raises a signal.
RingResult RingDoorbell(int fd);

// Reads every pending ring. False when it finds the peer's end closed (end of
// stream): a read that returns rings stops there, so a close behind them is
// reported by the next drain (the close is an edge of its own).
bool DrainDoorbell(int fd);

// Sleeps between drains for this side's end `fd` of a pair: kSleepsPerDrain when
// its send buffer (set by OpenDoorbellPair on both ends, so it stands for the
// peer's) holds the rings of that many sleeps with room to spare, else 1.
int DrainCadence(int fd);

// Process-wide counts, for tests and for the cost of a wake-up: rings sent (that
// went through) and recv calls made by drains.
struct DoorbellCounters {
  std::atomic<uint64_t> rings{0};
  std::atomic<uint64_t> drain_reads{0};
};
DoorbellCounters& DoorbellCounts();

}  // namespace artune::transport::fabric::shm
