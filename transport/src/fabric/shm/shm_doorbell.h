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
// The reader watches its end edge-triggered: each ring is one wake-up, and rings
// that come while nobody waits are kept by the socket until the next epoll_wait.
// Ringing never blocks: a full socket means wake-ups are pending already. The
// reader drains its end when woken, before it looks at the rings, so the socket
// does not fill and no record published before a ring goes unseen.
//
// Threading: Ring may be called from any thread; Drain from the one thread that
// reads the end (the shm progress pass). Errors: none are reported but the peer's
// end of the connection.
#pragma once

#include <array>

#include "artune/status.h"

namespace artune::transport::fabric::shm {

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

}  // namespace artune::transport::fabric::shm
