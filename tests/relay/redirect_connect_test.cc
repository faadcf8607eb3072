// The interposer's carried connect (redirect.cc), seen from a program: a helper
// (redirect_connect_probe) runs with the library preloaded and a stand-in for
// artune run's control socket that answers "carry, to this loopback port".
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "redirect_protocol.h"

namespace artune::relay {
namespace {

// A TCP listener on 127.0.0.1 (an ephemeral port) with the given backlog.
int LoopbackListener(int backlog, uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "no loopback listener: " << std::strerror(errno);
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

// Stands in for artune run's relay: answers one question on a unix socket with
// "carry, through 127.0.0.1:carry_port". Every wait is bounded at 20 s.
class FakeOriginRelay {
 public:
  explicit FakeOriginRelay(uint16_t carry_port) {
    char pattern[] = "/tmp/artune-redirect-XXXXXX";
    dir_ = mkdtemp(pattern) != nullptr ? pattern : "";
    path_ = dir_ + "/relay.sock";
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(listen_fd_, 4) != 0) {
      ADD_FAILURE() << "no control socket at " << path_ << ": " << std::strerror(errno);
    }
    answerer_ = std::thread([this, carry_port] { AnswerOne(carry_port); });
  }
  ~FakeOriginRelay() {
    answerer_.join();
    close(listen_fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  bool asked() const { return asked_; }

 private:
  void AnswerOne(uint16_t carry_port) {
    pollfd ready{listen_fd_, POLLIN, 0};
    if (poll(&ready, 1, 20'000) != 1) return;
    const int asker = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (asker < 0) return;
    RedirectRequest request;
    ready = {asker, POLLIN, 0};
    if (poll(&ready, 1, 20'000) == 1 &&
        recv(asker, &request, sizeof request, 0) == static_cast<ssize_t>(sizeof request) &&
        request.magic == kRedirectMagic) {
      asked_ = true;
      RedirectReply reply;
      reply.verdict = kRedirectCarry;
      reply.port_be = htons(carry_port);
      send(asker, &reply, sizeof reply, MSG_NOSIGNAL);
    }
    close(asker);
  }

  std::string dir_, path_;
  int listen_fd_ = -1;
  bool asked_ = false;
  std::thread answerer_;
};

// Runs the probe under the interposer (at most 20 s); its one line of output.
std::string Probe(const std::string& control_socket, const std::string& family, bool nonblocking) {
  // The destination only needs to be TCP/IPv4: the stand-in carries whatever is asked.
  const std::string command = std::string("timeout 20 env LD_PRELOAD=") +
                              ARTUNE_RELAY_REDIRECT_LIBRARY + " " + kRedirectSocketEnv + "=" +
                              control_socket + " " + ARTUNE_REDIRECT_CONNECT_PROBE + " " + family +
                              " 192.0.2.1 9 " + (nonblocking ? "nonblocking" : "blocking");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[512];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

std::string Expected(int result, int error, bool nonblocking, uint16_t port) {
  return "result=" + std::to_string(result) + " errno=" + std::to_string(error) +
         " nonblocking=" + (nonblocking ? "1" : "0") +
         " sndtimeo_ms=7000 peer_port=" + std::to_string(port) + "\n";
}

// A non-blocking connect that the relay carries completes before connect returns
// (0, its peer the relay's port) and the socket is given back as the program made
// it: still non-blocking, its own send timeout. (Before: -1 EINPROGRESS, which
// gRPC 1.51 could misread as the ENOENT left by later calls.)
TEST(RedirectConnect, ACarriedNonBlockingConnectCompletesAtOnce) {
  for (const char* family : {"v4", "v6"}) {
    uint16_t port = 0;
    const int listener = LoopbackListener(16, port);
    ASSERT_GE(listener, 0);
    std::string out;
    {
      FakeOriginRelay relay(port);
      out = Probe(relay.path(), family, /*nonblocking=*/true);
      EXPECT_TRUE(relay.asked()) << family;
    }
    EXPECT_EQ(out, Expected(0, 0, true, port)) << family;
    close(listener);
  }
}

TEST(RedirectConnect, ABlockingSocketConnectsAsBefore) {
  uint16_t port = 0;
  const int listener = LoopbackListener(16, port);
  ASSERT_GE(listener, 0);
  std::string out;
  {
    FakeOriginRelay relay(port);
    out = Probe(relay.path(), "v4", /*nonblocking=*/false);
  }
  EXPECT_EQ(out, Expected(0, 0, false, port));
  close(listener);
}

// The relay's listener cannot take the connection (its accept queue full, so the
// kernel drops the SYN): the program's non-blocking connect is not held until the
// SYN is sent again (a second); it returns EINPROGRESS after the interposer's
// short bound, the socket as the program made it.
TEST(RedirectConnect, AFullRelayListenerLeavesTheConnectInProgress) {
  uint16_t port = 0;
  const int listener = LoopbackListener(0, port);
  ASSERT_GE(listener, 0);
  std::vector<int> fillers;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 4; ++i) {  // backlog 0 takes one or two; the rest wait for a SYN resend
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(fd);
  }
  std::string out;
  {
    FakeOriginRelay relay(port);
    out = Probe(relay.path(), "v4", /*nonblocking=*/true);
  }
  EXPECT_EQ(out, Expected(-1, EINPROGRESS, true, 0));
  for (int fd : fillers) close(fd);
  close(listener);
}

}  // namespace
}  // namespace artune::relay
