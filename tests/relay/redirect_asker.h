// Test support: questions to an origin relay's control socket, asked the way the
// preload library asks them (redirect_protocol.h). Every blocking call is bounded
// at 20 s, so a relay that never answers fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "redirect_protocol.h"

namespace artune::relay::testing {

inline in_addr Loopback() { return in_addr{htonl(INADDR_LOOPBACK)}; }

// Sends the question "where does a connection to `host`:`port` go?" on a new
// connection to `control_socket`; returns that connection (the answer comes on
// it), or -1 when the question could not be sent.
inline int SendQuestion(const std::string& control_socket, in_addr host, uint16_t port) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  timeval wait{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, control_socket.c_str(), sizeof address.sun_path - 1);
  RedirectRequest request;
  request.family = AF_INET;
  request.port_be = htons(port);
  std::memcpy(request.address, &host, sizeof host);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      send(fd, &request, sizeof request, 0) != static_cast<ssize_t>(sizeof request)) {
    close(fd);
    return -1;
  }
  return fd;
}

// Asks about `host`:`port` and waits for the answer; verdict -1 when none came.
inline RedirectReply Ask(const std::string& control_socket, uint16_t port,
                         in_addr host = Loopback()) {
  RedirectReply reply;
  reply.verdict = -1;
  const int fd = SendQuestion(control_socket, host, port);
  EXPECT_GE(fd, 0) << "could not ask " << control_socket;
  if (fd < 0) return reply;
  if (recv(fd, &reply, sizeof reply, 0) != static_cast<ssize_t>(sizeof reply)) reply.verdict = -1;
  close(fd);
  return reply;
}

// The loopback port the origin relay carries a connection to 127.0.0.1:`port`
// through (expects it to carry).
inline uint16_t CarriedPort(const std::string& control_socket, uint16_t port) {
  const RedirectReply reply = Ask(control_socket, port);
  EXPECT_EQ(reply.verdict, kRedirectCarry);
  return ntohs(reply.port_be);
}

}  // namespace artune::relay::testing
