// The shm doorbell (shm_doorbell.h).
#include "fabric/shm/shm_doorbell.h"

#include <sys/socket.h>

#include <cerrno>

namespace artune::transport::fabric::shm {

Result<std::array<int, 2>> OpenDoorbellPair() {
  std::array<int, 2> fds{-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds.data()) != 0) {
    return Status::FromErrno("socketpair (the shm doorbell)", errno);
  }
  return fds;
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
  if (::send(fd, &ring, sizeof(ring), MSG_DONTWAIT | MSG_NOSIGNAL) == 1) return RingResult::kRung;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? RingResult::kPending
                                                                   : RingResult::kPeerGone;
}

bool DrainDoorbell(int fd) {
  // A short read means the socket was empty: a later ring is a new edge. Capped,
  // so that a peer ringing without pause cannot hold the pass here.
  char rings[256];
  for (int reads = 0; reads < 64; ++reads) {
    const ssize_t n = ::recv(fd, rings, sizeof(rings), MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n < static_cast<ssize_t>(sizeof(rings))) return true;
  }
  return true;
}

}  // namespace artune::transport::fabric::shm
