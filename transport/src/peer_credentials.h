// Which local user is at the other end of an accepted connection, and the rule a
// loopback server without a token applies to it (credentials.h says why).
//
// (The shm listener's unix sockets say so themselves, SO_PEERCRED: shm_setup.cc.)
// A loopback TCP connection's other
// end is a socket of this host and network namespace: the kernel's sock_diag
// (NETLINK_SOCK_DIAG, inet_diag, as `ss -e` shows it) looks it up by its 4-tuple,
// the accepted socket's reversed, and gives its owner's uid.
//
// Threading: every function here is thread-safe (one netlink socket per call).
// Errors are returned (Status), never thrown.
#pragma once

#include <sys/types.h>

#include <string>

#include "artune/status.h"

namespace artune::transport {

// The uid owning the other end of `fd`, an accepted or connected TCP socket whose
// peer is on this host (loopback). kNotFound when the peer socket is gone (it
// closed at once); kUnavailable when sock_diag cannot answer.
Result<uid_t> TcpPeerUid(int fd);

// The rule: this process's effective uid, or root (which can become any user, read
// any token file and ptrace any process, so refusing it would protect nothing and
// would only stop an administrator's `sudo artune apply config --live`).
bool IsAdmittedLocalUser(uid_t uid);

// Admits `fd` (TCP, loopback peer) when its owner passes IsAdmittedLocalUser;
// kPermissionDenied naming the uid otherwise, or the lookup's error (refused too:
// a peer that cannot be identified is not admitted).
Status AdmitLocalTcpPeer(int fd);

// "127.0.0.1:5000" / "[::1]:5000" for the peer of `fd` ("?" when unknown): for logs.
std::string PeerAddressText(int fd);

}  // namespace artune::transport
