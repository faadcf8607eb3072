// Test helper of redirect_connect_test.cc: run with the interposer preloaded, it
// connects one TCP socket the way a program does and prints what connect returned
// and what the socket looks like afterwards. It sets a send timeout of 7 s before
// the connect, to see that the interposer gives the program's own back.
//   redirect_connect_probe v4|v6 IPV4 PORT nonblocking|blocking
// Prints one line: result=R errno=E nonblocking=0|1 sndtimeo_ms=T peer_port=P
// (v6: an AF_INET6 socket connecting to the v4-mapped address, as gRPC does).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int PeerPort(int fd) {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) return 0;
  if (peer.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&peer)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s v4|v6 IPV4 PORT nonblocking|blocking\n", argv[0]);
    return 2;
  }
  const bool v6 = std::strcmp(argv[1], "v6") == 0;
  const bool nonblocking = std::strcmp(argv[4], "nonblocking") == 0;
  in_addr host{};
  if (inet_pton(AF_INET, argv[2], &host) != 1) return 2;
  const auto port = static_cast<uint16_t>(std::atoi(argv[3]));
  const int fd = socket(v6 ? AF_INET6 : AF_INET,
                        SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) return 2;
  const timeval own_timeout{7, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &own_timeout, sizeof own_timeout);
  int result;
  if (v6) {
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_port = htons(port);
    address.sin6_addr.s6_addr[10] = 0xff;
    address.sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&address.sin6_addr.s6_addr[12], &host, 4);
    result = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr = host;
    result = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  }
  const int error = result == 0 ? 0 : errno;
  timeval timeout{};
  socklen_t length = sizeof timeout;
  getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, &length);
  std::printf("result=%d errno=%d nonblocking=%d sndtimeo_ms=%ld peer_port=%d\n", result, error,
              (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0 ? 1 : 0,
              static_cast<long>(timeout.tv_sec * 1000 + timeout.tv_usec / 1000), PeerPort(fd));
  close(fd);
  return 0;
}
