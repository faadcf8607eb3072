// The origin role: the interposer's questions on the unix socket, and the loopback
// listeners whose connections are carried to one destination each.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "redirect_protocol.h"
#include "relay_impl.h"

namespace artune::relay {
namespace {

constexpr auto kNoRelayMemory = std::chrono::seconds(5);
// An asker that sent no question within this is closed (the interposer sends it
// right after connecting).
constexpr auto kAskerSilence = std::chrono::seconds(1);

}  // namespace

Status RelayImpl::StartControlSocket() {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (options_.control_socket.size() >= sizeof address.sun_path) {
    return Status::InvalidArgument("relay: the socket path " + options_.control_socket +
                                   " is too long for a unix socket");
  }
  std::strcpy(address.sun_path, options_.control_socket.c_str());
  control_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (control_fd_ < 0) return Status::FromErrno("relay: unix socket", errno);
  if (bind(control_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(control_fd_, 128) != 0) {
    return Status::FromErrno("relay: listening on " + options_.control_socket, errno);
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = control_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, control_fd_, &event);
  return Status::Ok();
}

// One question per accepted socket: the interposer sends a RedirectRequest right
// after connecting and waits for the reply (bounded by its receive timeout). The
// loop waits for neither: it reads the question when the socket is readable.
void RelayImpl::AcceptAskers() {
  for (int accepted = 0; accepted < 64; ++accepted) {
    const int asker = accept4(control_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (asker < 0) return;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = asker;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, asker, &event);
    askers_[asker] = std::chrono::steady_clock::now();
  }
}

void RelayImpl::DropSilentAskers() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(askers_, [now](const auto& asker) {
    if (now - asker.second < kAskerSilence) return false;
    close(asker.first);  // leaves the epoll set with it
    return true;
  });
}

void RelayImpl::AnswerQuestion(int asker) {
  askers_.erase(asker);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, asker, nullptr);
  RedirectRequest request;
  if (recv(asker, &request, sizeof request, MSG_DONTWAIT) != static_cast<ssize_t>(sizeof request) ||
      request.magic != kRedirectMagic ||
      (request.family != AF_INET && request.family != AF_INET6)) {
    close(asker);
    return;
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(request.family, request.address, text, sizeof text);
  const std::string host = text;
  const uint16_t port = ntohs(request.port_be);
  auto remembered = no_relay_.find(host);
  if (remembered != no_relay_.end() &&
      std::chrono::steady_clock::now() - remembered->second < kNoRelayMemory) {
    const RedirectReply direct;  // no relay there a moment ago
    send(asker, &direct, sizeof direct, MSG_NOSIGNAL);
    close(asker);
    return;
  }
  // Asking a host for its relay is a handshake (up to the control deadline when
  // it hangs): off the loop, so other destinations' questions are answered meanwhile.
  WithPeer(JoinHostPort(host, options_.relay_port),
           [this, asker, host, port](Result<std::shared_ptr<Peer>> peer) {
             Answer(asker, host, port, std::move(peer));
           });
}

void RelayImpl::Answer(int asker, const std::string& host, uint16_t port,
                       Result<std::shared_ptr<Peer>> peer) {
  const std::string relay = JoinHostPort(host, options_.relay_port);
  RedirectReply reply;
  if (peer.ok() && (*peer)->return_address.empty()) {
    auto back = ReturnAddressToward(host);
    if (back.ok()) {
      (*peer)->return_address = *back;
    } else {
      Log("relay: no return path from " + relay + ": " + back.status().ToString());
      peer = back.status();
      DropPeer(relay);
    }
  }
  if (peer.ok()) {
    auto listening = ListenerFor(host, port, *peer);
    if (listening.ok()) {
      reply.verdict = kRedirectCarry;
      reply.port_be = htons(*listening);
    } else {
      Log("relay: " + listening.status().ToString());
    }
  } else if (peer.status().code() == ErrorCode::kPermissionDenied) {
    Log("relay: the relay at " + relay + " refused this run (" + peer.status().message() +
        "); the connection to " + JoinHostPort(host, port) + " is refused");
    reply.verdict = kRedirectRefuse;
  } else {
    // Nothing answering there (refused, or not in time) is the usual "no relay on
    // that host" and stays quiet. A peer that answered and still did not take us
    // (another wire version: builds of two artune versions) is said, once per host
    // while the answer is remembered: the program's connections now go direct.
    const ErrorCode code = peer.status().code();
    if (code != ErrorCode::kUnavailable && code != ErrorCode::kTimeout) {
      Log("relay: the relay at " + relay + " does not carry for this one (" +
          peer.status().message() + "); connections to " + host + " go direct");
    }
    no_relay_[host] = std::chrono::steady_clock::now();  // no relay there: direct
  }
  send(asker, &reply, sizeof reply, MSG_NOSIGNAL);
  close(asker);
}

Result<uint16_t> RelayImpl::ListenerFor(const std::string& host, uint16_t port,
                                        std::shared_ptr<Peer> peer) {
  if (auto it = listener_by_dst_.find({host, port}); it != listener_by_dst_.end()) {
    return listeners_.at(it->second).port;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("relay: socket", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, 1024) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    close(fd);
    return Status::FromErrno("relay: a loopback listener for " + JoinHostPort(host, port), error);
  }
  Listener& listener = listeners_[fd];
  listener.fd = fd;
  listener.host = host;
  listener.dst_port = port;
  listener.port = ntohs(address.sin_port);
  listener.peer = std::move(peer);
  listener_by_dst_[{host, port}] = fd;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
  return listener.port;
}

void RelayImpl::AcceptCarried(Listener& listener) {
  for (int accepted = 0; accepted < 64; ++accepted) {
    const int fd = accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto conn = std::make_unique<Conn>(Toward::kOrigin, GrpcSplitter::Side::kClient);
    conn->session = session_;
    conn->id = next_conn_++;
    conn->fd = fd;
    conn->peer = listener.peer;
    Conn& added = AddConn(std::move(conn));
    OpenRequest open{session_, added.id, listener.peer->return_address, listener.host,
                     listener.dst_port};
    auto message = std::make_shared<OneSlice>(EncodeOpen(open));
    const uint64_t session = session_, id = added.id;
    // The program's bytes are read once the target has the connection (OpenedEvent);
    // until then its connect has succeeded and what it writes waits in the socket.
    StartCall(*added.peer, kOpenMethod, message->request(), message, transport::CallOptions{},
              [this, session, id](Result<transport::Message> reply) {
                if (reply.ok()) {
                  Post(OpenedEvent{session, id});
                } else {
                  Post(ConnFailedEvent{Toward::kOrigin, session, id, reply.status().ToString()});
                }
              });
  }
}

void RelayImpl::Handle(OpenedEvent& event) {
  if (Conn* conn = FindConn(Toward::kOrigin, event.session, event.conn)) UpdateInterest(*conn);
}

}  // namespace artune::relay
