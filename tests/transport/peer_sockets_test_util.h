// Sockets opened by another local user, for the tests of who a loopback server
// admits (local_users_test.cc): a forked child drops to uid/gid 65534 ("nobody"),
// connects, and passes the connected socket back over a unix socket pair. The
// kernel keeps the creator as the socket's owner (sock_diag) and the connecting
// process as its SO_PEERCRED, so the test then speaks through it as that user.
// Between fork and _exit the child makes only async-signal-safe system calls.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace artune::transport::testing {

inline constexpr uid_t kNobody = 65534;

inline sockaddr_in LoopbackAddress(uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// "shm:@name" -> the abstract unix address and its length.
inline std::pair<sockaddr_un, socklen_t> AbstractAddress(const std::string& endpoint) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = endpoint.substr(endpoint.find('@'));
  std::memcpy(address.sun_path, name.data(), name.size());
  address.sun_path[0] = '\0';
  return {address, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())};
}

// A socket of `family`/`type` connected to `address` by a process running as
// `uid` (this process's own when uid == geteuid()); -1 when that failed.
inline int ConnectAs(uid_t uid, int family, int type, const sockaddr* address, socklen_t length) {
  if (uid == ::geteuid()) {
    const int fd = ::socket(family, type | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, address, length) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pair[0]);
    if (::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(2);
    const int fd = ::socket(family, type, 0);
    if (fd < 0 || ::connect(fd, address, length) != 0) ::_exit(3);
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
    ::_exit(::sendmsg(pair[1], &message, 0) == 1 ? 0 : 4);
  }
  ::close(pair[1]);
  int fd = -1;
  if (child > 0) {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    if (::recvmsg(pair[0], &message, MSG_CMSG_CLOEXEC) == 1) {
      if (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr && c->cmsg_type == SCM_RIGHTS) {
        std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
      }
    }
    int status = 0;
    ::waitpid(child, &status, 0);
  }
  ::close(pair[0]);
  return fd;
}

inline int ConnectTcpAs(uid_t uid, uint16_t port) {
  const sockaddr_in address = LoopbackAddress(port);
  return ConnectAs(uid, AF_INET, SOCK_STREAM, reinterpret_cast<const sockaddr*>(&address),
                   sizeof(address));
}

}  // namespace artune::transport::testing
