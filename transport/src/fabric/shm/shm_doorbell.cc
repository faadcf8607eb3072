// The shm doorbell (shm_doorbell.h).
#include "fabric/shm/shm_doorbell.h"

#include <sys/socket.h>

#include <cerrno>

namespace artune::transport::fabric::shm {

namespace {
// Bytes of send buffer one pending ring takes (a one-byte skb's truesize is about
// 770 on x86-64), with margin for kernels whose sk_buff is bigger.
constexpr int kBytesPerRing = 1536;
}  // namespace

DoorbellCounters& DoorbellCounts() {
  static DoorbellCounters counters;
  return counters;
}

Result<std::array<int, 2>> OpenDoorbellPair() {
  std::array<int, 2> fds{-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds.data()) != 0) {
    return Status::FromErrno("socketpair (the shm doorbell)", errno);
  }
  // Raised where the default is smaller (net.core.wmem_default), never lowered.
  // Not an error when refused or capped: DrainCadence reads back what was granted.
  for (int fd : fds) {
    int bytes = 0;
    socklen_t length = sizeof(bytes);
    if (::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &length) == 0 &&
        bytes < 2 * kDoorbellSendBuffer) {
      (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kDoorbellSendBuffer,
                         sizeof(kDoorbellSendBuffer));
    }
  }
  return fds;
}

int DrainCadence(int fd) {
  int bytes = 0;
  socklen_t length = sizeof(bytes);
  if (::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &length) != 0) return 1;
  // The rings of kSleepsPerDrain sleeps, plus the flags set before the last drain
  // and taken after it, twice over.
  constexpr int kRingsBetweenDrains = kWakeFlags * (kSleepsPerDrain + 1);
  return bytes / kBytesPerRing >= 2 * kRingsBetweenDrains ? kSleepsPerDrain : 1;
}

bool IsDoorbell(int fd) {
  int type = 0;
  int domain = 0;
  socklen_t length = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) return false;
  length = sizeof(domain);
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) return false;
  return type == SOCK_STREAM && domain == AF_UNIX;
}

RingResult RingDoorbell(int fd) {
  const char ring = 1;
  // MSG_DONTWAIT: the descriptor's own flags are shared with the peer's process
  // (SCM_RIGHTS passes the open file), so they are not relied on.
  if (::send(fd, &ring, sizeof(ring), MSG_DONTWAIT | MSG_NOSIGNAL) == 1) {
    DoorbellCounts().rings.fetch_add(1, std::memory_order_relaxed);
    return RingResult::kRung;
  }
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? RingResult::kPending
                                                                   : RingResult::kPeerGone;
}

bool DrainDoorbell(int fd) {
  // A short read means the socket was empty: a later ring is a new edge. Capped,
  // so that a peer ringing without pause cannot hold the pass here.
  char rings[256];
  for (int reads = 0; reads < 64; ++reads) {
    const ssize_t n = ::recv(fd, rings, sizeof(rings), MSG_DONTWAIT);
    DoorbellCounts().drain_reads.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n < static_cast<ssize_t>(sizeof(rings))) return true;
  }
  return true;
}

}  // namespace artune::transport::fabric::shm
