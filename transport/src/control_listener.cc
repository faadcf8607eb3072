// The control plane's own listener and accept loop (control_listener.h).
#include "control_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>

#include "artune/transport/transport.h"
#include "peer_credentials.h"
#include "refusal_log.h"
#include "thread_name.h"

namespace artune::transport {
namespace {

constexpr int kMinAcceptPauseMs = 50;
constexpr int kMaxAcceptPauseMs = 1000;
constexpr size_t kMaxControlConnections = 256;
constexpr size_t kReservedDescriptors = 128;

uint64_t SocketInode(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return 0;
  return static_cast<uint64_t>(info.st_ino);
}

// The peer's address without its port ("" when unknown): connections are counted
// per peer by it. (An IPv4 peer of a "::" listener is its mapped IPv6 address,
// the same for all of its connections.)
std::string PeerHost(int fd) {
  sockaddr_storage remote{};
  socklen_t length = sizeof(remote);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &length) != 0) return "";
  if (remote.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(remote);
    return std::string(reinterpret_cast<const char*>(&v4.sin_addr), sizeof(v4.sin_addr));
  }
  if (remote.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(remote);
    return std::string(reinterpret_cast<const char*>(&v6.sin6_addr), sizeof(v6.sin6_addr));
  }
  return "";
}

// The addresses to try for `host`, IPv4 first (clients of "localhost" try both).
Result<std::vector<sockaddr_storage>> Resolve(const std::string& host, uint16_t port) {
  std::string bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = ::getaddrinfo(bare.empty() || bare == "0.0.0.0" ? "0.0.0.0" : bare.c_str(),
                                  service.c_str(), &hints, &found);
  if (error != 0) {
    return Status::InvalidArgument("cannot resolve the control-plane address '" + host +
                                   "': " + ::gai_strerror(error));
  }
  std::vector<sockaddr_storage> addresses;
  for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    sockaddr_storage address{};
    std::memcpy(&address, entry->ai_addr, std::min<size_t>(entry->ai_addrlen, sizeof(address)));
    addresses.push_back(address);
  }
  ::freeaddrinfo(found);
  std::stable_partition(addresses.begin(), addresses.end(),
                        [](const sockaddr_storage& a) { return a.ss_family == AF_INET; });
  return addresses;
}

// A listening socket on `address`, or the errno of the step that failed.
Result<int> ListenOn(const sockaddr_storage& address) {
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket for the control plane", errno);
  int one = 1, zero = 0;
  // As gRPC's own listener: a restarted server may take its port back at once
  // (SO_REUSEADDR); no SO_REUSEPORT, which would let two servers share a port.
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.ss_family == AF_INET6) {
    // "::" also takes IPv4 clients, as gRPC's listener did.
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  }
  const socklen_t length =
      address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    Status error = Status::FromErrno("bind/listen", errno);
    ::close(fd);
    return error;
  }
  return fd;
}

}  // namespace

Result<uint16_t> ParseListenPort(const std::string& listen_address) {
  const size_t colon = listen_address.rfind(':');
  unsigned port = 0;
  const char* begin = listen_address.data() + (colon == std::string::npos ? 0 : colon + 1);
  const char* end = listen_address.data() + listen_address.size();
  auto [ptr, error] = std::from_chars(begin, end, port);
  if (colon == std::string::npos || begin == end || error != std::errc() || ptr != end ||
      port > 65535) {
    return Status::InvalidArgument("listen address '" + listen_address +
                                   "' is not host:port with a port from 0 to 65535 (0 picks one)");
  }
  return static_cast<uint16_t>(port);
}

void ApplyControlPlaneLimits(grpc::ServerBuilder& builder) {
  // A larger request is refused (RESOURCE_EXHAUSTED) by gRPC's message-size
  // check, before it is parsed into a message and before the token is looked at.
  builder.SetMaxReceiveMessageSize(kMaxControlRequestBytes);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kControlHandshakeTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, kControlIdleTimeoutMs);
}

Status RaiseDescriptorLimit() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return Status::FromErrno("getrlimit", errno);
  if (limit.rlim_cur >= limit.rlim_max) return Status::Ok();
  const rlim_t soft = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Status::IoError("cannot raise the descriptor limit from " + std::to_string(soft) +
                           " to " + std::to_string(limit.rlim_max) + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

size_t ControlConnectionCap() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return kMaxControlConnections;
  }
  const auto soft = static_cast<size_t>(limit.rlim_cur);
  const size_t share = soft > kReservedDescriptors ? (soft - kReservedDescriptors) / 4 : 0;
  return std::clamp<size_t>(share, 8, kMaxControlConnections);
}

size_t ControlConnectionsPerPeer(size_t listener_cap) {
  return std::max<size_t>(4, listener_cap / 2);
}

size_t DescriptorReserve() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return kReservedDescriptors;
  }
  return std::min(kReservedDescriptors, static_cast<size_t>(limit.rlim_cur) / 4);
}

bool TakesFromTheReserve(int fd) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return false;
  // accept4 returns the lowest free number: every descriptor below `fd` is in
  // use, so at most limit - fd - 1 remain free.
  return static_cast<size_t>(fd) + DescriptorReserve() >= static_cast<size_t>(limit.rlim_cur);
}

Result<std::unique_ptr<ControlListener>> ControlListener::Bind(const std::string& host,
                                                               uint16_t port,
                                                               const Options& options) {
  ARTUNE_ASSIGN_OR_RETURN(std::vector<sockaddr_storage> addresses, Resolve(host, port));
  Status last = Status::Unavailable("no address for '" + host + "'");
  for (const sockaddr_storage& address : addresses) {
    Result<int> listening = ListenOn(address);
    if (!listening.ok()) {
      last = listening.status();
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    ::getsockname(*listening, reinterpret_cast<sockaddr*>(&bound), &length);
    const uint16_t bound_port =
        ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                          : reinterpret_cast<sockaddr_in&>(bound).sin_port);
    const int stop_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (stop_fd < 0) {
      Status error = Status::FromErrno("eventfd for the control listener", errno);
      ::close(*listening);
      return error;
    }
    return std::unique_ptr<ControlListener>(
        new ControlListener(*listening, stop_fd, bound_port, options));
  }
  return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(port) + " (" +
                             last.message() + "): address in use or not local?");
}

ControlListener::ControlListener(int listen_fd, int stop_fd, uint16_t port, const Options& options)
    : listen_fd_(listen_fd), stop_fd_(stop_fd), port_(port), options_(options) {}

ControlListener::~ControlListener() {
  Stop();
  ::close(stop_fd_);
}

void ControlListener::Start(
    std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor) {
  acceptor_ = std::move(acceptor);
  thread_ = std::thread([this] { AcceptLoop(); });
}

void ControlListener::Stop() {
  if (stopped_.exchange(true)) return;
  const uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  // A stopped server refuses new connections at once, as gRPC's own listener did
  // at Shutdown: left open, the port would take them into its backlog and every
  // client would wait out its deadline (kTimeout) instead of learning that the
  // server is gone (kUnavailable). Those already in the backlog are reset.
  ::close(listen_fd_);
  listen_fd_ = -1;
}

bool ControlListener::WaitReadable(int timeout_ms) {
  pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
  // While paused (timeout_ms >= 0), only Stop may end the wait early: a listener
  // with a connection it cannot accept stays readable and would spin.
  const nfds_t count = timeout_ms >= 0 ? 1 : 2;
  int ready = 0;
  do {
    ready = ::poll(fds, count, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  return !stopped_.load() && (fds[0].revents & POLLIN) == 0;
}

void ControlListener::AcceptLoop() {
  NameThisThread("artune-control");
  int pause_ms = 0;
  while (WaitReadable(-1)) {
    while (!stopped_.load()) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0 && TakesFromTheReserve(fd)) {
        ::close(fd);
        if (!PauseAccepting(pause_ms, "refused a connection: it took descriptor " +
                                          std::to_string(fd) + ", one of the last " +
                                          std::to_string(DescriptorReserve()) +
                                          " below the limit, kept for the rest of the server")) {
          return;
        }
        continue;
      }
      if (fd >= 0) {
        pause_ms = 0;
        Admit(fd);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == EPERM) continue;
      const int error = errno;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        if (!PauseAccepting(pause_ms,
                            std::string("cannot accept (") + std::strerror(error) + ")")) {
          return;
        }
        continue;
      }
      break;  // EAGAIN: wait for the next connection
    }
  }
}

bool ControlListener::PauseAccepting(int& pause_ms, const std::string& why) {
  pause_ms = std::clamp(pause_ms * 2, kMinAcceptPauseMs, kMaxAcceptPauseMs);
  LogRefusal("control plane on port " + std::to_string(port_) + ": " + why +
             "; pausing accepts for " + std::to_string(pause_ms) +
             " ms (raise ulimit -n if this persists)");
  return WaitReadable(pause_ms);
}

void ControlListener::Admit(int fd) {
  if (options_.own_user_only) {
    if (Status admitted = AdmitLocalTcpPeer(fd); !admitted.ok()) {
      LogRefusal("control plane on port " + std::to_string(port_) + ": " + admitted.message());
      ::close(fd);
      return;
    }
  }
  std::string peer = PeerHost(fd);
  const size_t per_peer = ControlConnectionsPerPeer(options_.max_connections);
  if (handed_.size() >= options_.max_connections || ConnectionsOf(peer) >= per_peer) {
    ForgetClosedConnections();
  }
  const std::string why =
      handed_.size() >= options_.max_connections
          ? std::to_string(handed_.size()) + " connections open, the limit of this listener"
      : ConnectionsOf(peer) >= per_peer
          ? std::to_string(per_peer) + " connections open from that address, the limit per peer"
          : std::string();
  if (!why.empty()) {
    LogRefusal("control plane on port " + std::to_string(port_) + ": refused a connection from " +
               PeerAddressText(fd) + ": " + why + " (silent ones close after " +
               std::to_string(kControlHandshakeTimeoutMs / 1000) + " s, idle ones after " +
               std::to_string(kControlIdleTimeoutMs / 1000) + " s)");
    ::close(fd);
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  handed_.push_back({fd, SocketInode(fd), std::move(peer)});
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters parameters;
  parameters.listener_fd = listen_fd_;
  parameters.fd = fd;
  acceptor_->HandleNewConnection(&parameters);  // gRPC owns `fd` from here
}

size_t ControlListener::ConnectionsOf(const std::string& peer) const {
  return static_cast<size_t>(std::count_if(
      handed_.begin(), handed_.end(), [&](const Handed& handed) { return handed.peer == peer; }));
}

void ControlListener::ForgetClosedConnections() {
  std::erase_if(handed_, [](const Handed& handed) {
    const uint64_t inode = SocketInode(handed.fd);
    return inode == 0 || inode != handed.inode;
  });
}

}  // namespace artune::transport
