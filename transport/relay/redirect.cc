// libartune_relay_redirect.so: loaded into a command with LD_PRELOAD by
// `artune run -- CMD`, it wraps connect(). For a TCP socket (AF_INET or AF_INET6)
// it asks artune run's relay, over the unix socket named by ARTUNE_RELAY_SOCKET
// (redirect_protocol.h), what to do with the destination: connect as asked
// ("direct": no relay answers on that host), connect to a loopback port of the
// relay instead (which carries the connection to the relay on the destination's
// host), or fail with ECONNREFUSED (that relay refused this run). The program
// keeps the real kernel socket it made, so epoll, non-blocking connect, fork and
// exec work as before; only the peer address differs (getpeername shows the
// loopback port).
//
// Contract with the application: no allocation and no lock in the wrapper; errno
// is the real connect's (or ECONNREFUSED on a refusal). The question is a
// blocking exchange of one packet each way on a socket of its own, bounded by a
// 10 s receive timeout; when the relay cannot be asked the connect goes direct.
// Children inherit the environment, so exec'd programs are redirected too.
//
// A carried connect completes before it returns, even on a non-blocking socket
// (ConnectToRelay): 0, as a non-blocking connect may return. gRPC 1.51 (Debian
// 12's, in C++ and Python programs) reads errno only after more calls once
// connect returns -1, and under lock contention those calls can leave ENOENT
// there (absl's first contended mutex probes a sysfs file that does not exist):
// the program's connect then failed with "No such file or directory", 1 in 10
// runs of 16 channels connecting at once under artune run. A connect that
// returns 0 is never read for errno.
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "redirect_protocol.h"

#define ARTUNE_EXPORT extern "C" __attribute__((visibility("default")))

namespace artune::relay {
namespace {

using ConnectFunction = int (*)(int, const sockaddr*, socklen_t);
ConnectFunction real_connect = nullptr;
pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

void Resolve() { real_connect = reinterpret_cast<ConnectFunction>(dlsym(RTLD_NEXT, "connect")); }

bool IsTcpSocket(int fd) {
  int type = 0, protocol = 0;
  socklen_t length = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) {
    return false;
  }
  length = sizeof protocol;
  return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length) == 0 &&
         protocol == IPPROTO_TCP;
}

// Asks the relay; false when it cannot be asked (then: direct).
bool Ask(const char* path, const RedirectRequest& request, RedirectReply& reply) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t length = std::strlen(path);
  if (length >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, path, length + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval wait{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  bool answered = false;
  if (real_connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
      send(fd, &request, sizeof request, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof request)) {
    ssize_t got;
    do {
      got = recv(fd, &reply, sizeof reply, 0);
    } while (got < 0 && errno == EINTR);
    answered = got == static_cast<ssize_t>(sizeof reply);
  }
  close(fd);
  return answered;
}

// Connects `fd` to the relay's loopback port. A non-blocking socket is made
// blocking for the call, with a send timeout of kCarriedConnectBound, and then
// restored: the loopback handshake completes inside the call (0), and a listener
// that cannot take the connection yet (its backlog full) costs the caller at most
// the bound, after which the connect goes on in the background as a non-blocking
// one would (EINPROGRESS). A blocking socket connects as the program asked.
int ConnectToRelay(int fd, const sockaddr* address, socklen_t length) {
  constexpr timeval kCarriedConnectBound{0, 100'000};
  const int flags = fcntl(fd, F_GETFL);
  timeval program_timeout{};
  socklen_t timeout_length = sizeof program_timeout;
  if (flags < 0 || (flags & O_NONBLOCK) == 0 ||
      getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &program_timeout, &timeout_length) != 0) {
    return real_connect(fd, address, length);
  }
  if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kCarriedConnectBound, sizeof kCarriedConnectBound) !=
          0 ||
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &program_timeout, sizeof program_timeout);
    return real_connect(fd, address, length);
  }
  const int result = real_connect(fd, address, length);
  const int error = errno;
  fcntl(fd, F_SETFL, flags);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &program_timeout, sizeof program_timeout);
  // Interrupted, the connect goes on in the background: for a non-blocking
  // socket that is EINPROGRESS (a retry would find it connecting: EALREADY).
  errno = result != 0 && error == EINTR ? EINPROGRESS : error;
  return result;
}

}  // namespace
}  // namespace artune::relay

ARTUNE_EXPORT int connect(int fd, const sockaddr* address, socklen_t length) {
  using namespace artune::relay;
  pthread_once(&resolve_once, Resolve);
  const char* path = std::getenv(kRedirectSocketEnv);
  if (path == nullptr || address == nullptr ||
      (address->sa_family != AF_INET && address->sa_family != AF_INET6) || !IsTcpSocket(fd)) {
    return real_connect(fd, address, length);
  }
  const int saved_errno = errno;
  RedirectRequest request;
  request.family = address->sa_family;
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(address);
    request.port_be = in4->sin_port;
    std::memcpy(request.address, &in4->sin_addr, 4);
  } else if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    request.port_be = in6->sin6_port;
    std::memcpy(request.address, &in6->sin6_addr, 16);
    // A v4-mapped address is asked about as the IPv4 address it is.
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(request.address, kMapped, 12) == 0) {
      request.family = AF_INET;
      std::memmove(request.address, request.address + 12, 4);
      std::memset(request.address + 4, 0, 12);
    }
  } else {
    return real_connect(fd, address, length);
  }
  RedirectReply reply;
  if (!Ask(path, request, reply) || reply.verdict == kRedirectDirect) {
    errno = saved_errno;
    return real_connect(fd, address, length);
  }
  if (reply.verdict == kRedirectRefuse) {
    errno = ECONNREFUSED;
    return -1;
  }
  errno = saved_errno;
  if (address->sa_family == AF_INET) {
    sockaddr_in loopback{};
    loopback.sin_family = AF_INET;
    loopback.sin_port = reply.port_be;
    loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ConnectToRelay(fd, reinterpret_cast<const sockaddr*>(&loopback), sizeof loopback);
  }
  sockaddr_in6 mapped{};  // the relay listens on 127.0.0.1: reach it v4-mapped
  mapped.sin6_family = AF_INET6;
  mapped.sin6_port = reply.port_be;
  mapped.sin6_addr.s6_addr[10] = 0xff;
  mapped.sin6_addr.s6_addr[11] = 0xff;
  mapped.sin6_addr.s6_addr[12] = 127;
  mapped.sin6_addr.s6_addr[15] = 1;
  return ConnectToRelay(fd, reinterpret_cast<const sockaddr*>(&mapped), sizeof mapped);
}
