// The owner of a loopback peer socket, from the kernel's sock_diag
// (peer_credentials.h).
#include "peer_credentials.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace artune::transport {
namespace {

// One socket address, as inet_diag's id wants it (network byte order).
struct DiagAddress {
  uint8_t family = 0;
  uint16_t port = 0;  // network order
  uint32_t words[4] = {};
};

Result<DiagAddress> ToDiagAddress(const sockaddr_storage& storage) {
  DiagAddress out;
  if (storage.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(storage);
    out.family = AF_INET;
    out.port = v4.sin_port;
    std::memcpy(out.words, &v4.sin_addr, sizeof(v4.sin_addr));
    return out;
  }
  if (storage.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(storage);
    out.port = v6.sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {  // an IPv4 peer of a dual-stack socket
      out.family = AF_INET;
      std::memcpy(out.words, v6.sin6_addr.s6_addr + 12, 4);
    } else {
      out.family = AF_INET6;
      std::memcpy(out.words, &v6.sin6_addr, sizeof(v6.sin6_addr));
    }
    return out;
  }
  return Status::InvalidArgument("not an IP socket (family " + std::to_string(storage.ss_family) +
                                 ")");
}

// Asks inet_diag for the one TCP socket bound to `local` and connected to
// `remote` (an exact lookup, not a dump) and returns its owner.
Result<uid_t> LookUpOwner(const DiagAddress& local, const DiagAddress& remote) {
  const int netlink = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (netlink < 0) return Status::FromErrno("socket(NETLINK_SOCK_DIAG)", errno);
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = local.family;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  inet_diag_sockid& id = message.request.id;
  id.idiag_sport = local.port;
  id.idiag_dport = remote.port;
  std::memcpy(id.idiag_src, local.words, sizeof(id.idiag_src));
  std::memcpy(id.idiag_dst, remote.words, sizeof(id.idiag_dst));
  id.idiag_cookie[0] = id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  Result<uid_t> owner = Status::Unavailable("sock_diag gave no answer");
  if (::sendto(netlink, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) != static_cast<ssize_t>(sizeof(message))) {
    owner = Status::FromErrno("sock_diag request", errno);
  } else {
    alignas(nlmsghdr) char reply[1024];
    ssize_t n = 0;
    do {
      n = ::recv(netlink, reply, sizeof(reply), 0);
    } while (n < 0 && errno == EINTR);
    const auto* header = reinterpret_cast<const nlmsghdr*>(reply);
    if (n < 0) {
      owner = Status::FromErrno("sock_diag reply", errno);
    } else if (NLMSG_OK(header, static_cast<uint32_t>(n)) && header->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
      owner = error->error == -ENOENT ? Status::NotFound("the peer's socket is gone")
                                      : Status::FromErrno("sock_diag lookup", -error->error);
    } else if (NLMSG_OK(header, static_cast<uint32_t>(n)) &&
               header->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
               header->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      owner = static_cast<uid_t>(static_cast<const inet_diag_msg*>(NLMSG_DATA(header))->idiag_uid);
    }
  }
  ::close(netlink);
  return owner;
}

}  // namespace

Result<uid_t> TcpPeerUid(int fd) {
  sockaddr_storage local{}, remote{};
  socklen_t local_length = sizeof(local), remote_length = sizeof(remote);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_length) != 0) {
    return Status::FromErrno("the addresses of an accepted connection", errno);
  }
  ARTUNE_ASSIGN_OR_RETURN(DiagAddress ours, ToDiagAddress(local));
  ARTUNE_ASSIGN_OR_RETURN(DiagAddress theirs, ToDiagAddress(remote));
  // The peer's socket: bound to their address, connected to ours.
  return LookUpOwner(theirs, ours);
}

bool IsAdmittedLocalUser(uid_t uid) { return uid == ::geteuid() || uid == 0; }

Status AdmitLocalTcpPeer(int fd) {
  Result<uid_t> owner = TcpPeerUid(fd);
  if (!owner.ok()) {
    return Status::PermissionDenied("connection from " + PeerAddressText(fd) +
                                    " refused: cannot tell which user opened it (" +
                                    owner.status().message() + ")");
  }
  if (!IsAdmittedLocalUser(*owner)) {
    return Status::PermissionDenied(
        "connection from " + PeerAddressText(fd) + " refused: it belongs to uid " +
        std::to_string(*owner) + ", and this loopback server without a token serves " +
        (::geteuid() == 0 ? std::string("root")
                          : "uid " + std::to_string(::geteuid()) + " and root") +
        " only; give it a token to admit others");
  }
  return Status::Ok();
}

std::string PeerAddressText(int fd) {
  sockaddr_storage remote{};
  socklen_t length = sizeof(remote);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &length) != 0) return "?";
  char text[INET6_ADDRSTRLEN] = {};
  if (remote.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(remote);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(v4.sin_port));
  }
  if (remote.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(remote);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(v6.sin6_port));
  }
  return "?";
}

}  // namespace artune::transport
