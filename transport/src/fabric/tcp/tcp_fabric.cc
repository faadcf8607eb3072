// The tcp fabric: registration table, listener, connector and the progress thread.
#include "fabric/tcp/tcp_fabric.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fabric/spin_governor.h"
#include "peer_credentials.h"
#include "refusal_log.h"
#include "thread_name.h"

namespace artune::transport::fabric::tcp {
namespace {

// An accepted connection must send its hello within this time, or it is closed
// (silent connections would hold descriptors forever).
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// Pauses of the listener after accept failed for want of descriptors or memory.
constexpr auto kMinAcceptPause = std::chrono::milliseconds(50);
constexpr auto kMaxAcceptPause = std::chrono::milliseconds(1000);
// Descriptors kept out of the data connections' share: the control plane, the
// store, logs, the progress machinery.
constexpr size_t kReservedDescriptors = 128;

size_t MaxEndpointsForDescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  const size_t soft = static_cast<size_t>(limit.rlim_cur);
  // Half of what is left after the reserve: the gRPC control plane's own
  // connections come from the same table.
  return std::max<size_t>(8, soft > kReservedDescriptors ? (soft - kReservedDescriptors) / 2 : 8);
}

void TuneSocket(int fd) {
  int one = 1;
  // Small eager packets must leave at once: no Nagle delay on the latency path.
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string AddressText(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
}

// "host:port" -> IPv4 socket address (names resolved with getaddrinfo).
Result<sockaddr_in> ParseEndpoint(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("tcp data endpoint '" + endpoint + "' is not host:port");
  }
  const std::string host = endpoint.substr(0, colon);
  const std::string port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::InvalidArgument("cannot resolve tcp data endpoint '" + endpoint +
                                   "': " + ::gai_strerror(rc));
  }
  sockaddr_in address{};
  std::memcpy(&address, found->ai_addr, sizeof(address));
  ::freeaddrinfo(found);
  return address;
}

Status WriteAll(int fd, const void* data, size_t length, const std::string& what) {
  const auto* bytes = static_cast<const char*>(data);
  while (length > 0) {
    ssize_t n = ::send(fd, bytes, length, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(what, errno);
    }
    bytes += n;
    length -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

TcpFabric::TcpFabric(PollingMode polling)
    : ProgressFabric(FabricKind::kTcp, polling, /*poll_spin_us=*/0) {}

TcpFabric::~TcpFabric() { Shutdown(); }

Status TcpFabric::Init() {
  // Tag 0 (a null data.ptr): the wake-up eventfd.
  ARTUNE_ASSIGN_OR_RETURN(epoll_fd_, OpenEpollWithWake("tcp", /*wake_tag=*/0));
  max_endpoints_ = MaxEndpointsForDescriptorLimit();
  StartProgressThread();
  return Status::Ok();
}

Result<MemoryKeys> TcpFabric::Register(std::byte* addr, uint64_t length) {
  if (addr == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory region");
  }
  auto region = std::make_shared<Region>();
  region->addr = addr;
  region->length = length;
  // Set before the key can be known to anyone (Register returns it).
  region->key = regions_.Add(region);
  return MemoryKeys{region->key, region->key};
}

void TcpFabric::Deregister(const MemoryKeys& keys) {
  std::shared_ptr<Region> region = regions_.Take(keys.rkey);
  if (region == nullptr) return;
  std::lock_guard lock(region->write_mutex);
  region->revoked = true;
}

Result<std::string> TcpFabric::Listen(const std::string& host, AcceptHandler on_accept) {
  if (listen_fd_ >= 0) return Status::AlreadyExists("the tcp fabric is already listening");
  ARTUNE_ASSIGN_OR_RETURN(sockaddr_in address, ParseEndpoint(host + ":0"));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket for the tcp data listener", errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 128) != 0) {
    Status error = Status::FromErrno("bind/listen tcp data endpoint on " + host, errno);
    ::close(fd);
    return error;
  }
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  on_accept_ = std::move(on_accept);
  listen_fd_ = fd;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = this;  // the fabric itself: the listener
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    return Status::FromErrno("epoll_ctl(listener)", errno);
  }
  return AddressText(address);
}

Result<std::shared_ptr<Endpoint>> TcpFabric::Connect(const std::string& endpoint,
                                                     std::span<const std::byte> private_data) {
  if (private_data.size() > wire::kMaxHelloBytes) {
    return Status::InvalidArgument("connect private data of " +
                                   std::to_string(private_data.size()) + " bytes (limit " +
                                   std::to_string(wire::kMaxHelloBytes) + ")");
  }
  ARTUNE_ASSIGN_OR_RETURN(sockaddr_in address, ParseEndpoint(endpoint));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket for the tcp data connection", errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    Status error = Status::Unavailable(
        Status::FromErrno("connect to tcp data endpoint " + endpoint, errno).message());
    ::close(fd);
    return error;
  }
  TuneSocket(fd);
  wire::FrameHeader hello{};
  hello.magic = wire::kTcpMagic;
  hello.version = static_cast<uint8_t>(wire::kWireVersion);
  hello.kind = static_cast<uint8_t>(wire::FrameKind::kHello);
  hello.body_bytes = private_data.size();
  Status sent = WriteAll(fd, &hello, sizeof(hello), "send hello to " + endpoint);
  if (sent.ok()) sent = WriteAll(fd, private_data.data(), private_data.size(), "send hello");
  if (!sent.ok()) {
    ::close(fd);
    return Status::Unavailable(sent.message());
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto created = std::make_shared<TcpEndpoint>(*this, fd, endpoint, /*awaiting_hello=*/false);
  {
    std::lock_guard lock(endpoints_mutex_);
    if (stopping_) return Status::Cancelled("the tcp fabric is shutting down");
    endpoints_[created.get()] = created;
  }
  return std::shared_ptr<Endpoint>(created);
}

Status TcpFabric::WatchEndpoint(TcpEndpoint* endpoint, bool want_write) {
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
  event.data.ptr = endpoint;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, endpoint->fd(), &event) == 0) return Status::Ok();
  if (errno == ENOENT && ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, endpoint->fd(), &event) == 0) {
    return Status::Ok();
  }
  return Status::FromErrno("epoll_ctl(data connection " + endpoint->peer() + ")", errno);
}

void TcpFabric::UnwatchEndpoint(TcpEndpoint* endpoint) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, endpoint->fd(), nullptr);
}

void TcpFabric::Forget(TcpEndpoint* endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) return;
  graveyard_.push_back(std::move(it->second));
  endpoints_.erase(it);
}

Status TcpFabric::OnHello(TcpEndpoint& endpoint, std::span<const std::byte> private_data) {
  if (!on_accept_) return Status::Internal("a hello arrived on a fabric that does not listen");
  Status accepted = on_accept_(endpoint.shared_from_this(), private_data);
  if (!accepted.ok())
    return accepted.WithContext("connection from " + endpoint.peer() + " refused");
  return Status::Ok();
}

void TcpFabric::AcceptAll() {
  while (true) {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors or memory: the pending connection stays queued and the
      // listener stays readable, so waiting on it again would spin. Pause instead.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        PauseAccepting(errno);
      }
      return;  // EAGAIN, or a transient error: the next wake-up retries
    }
    accept_backoff_ = std::chrono::milliseconds(0);
    if (own_user_only_) {
      if (Status admitted = AdmitLocalTcpPeer(fd); !admitted.ok()) {
        LogRefusal("tcp data listener: " + admitted.message());
        ::close(fd);
        continue;
      }
    }
    size_t open = 0;
    {
      std::lock_guard lock(endpoints_mutex_);
      open = endpoints_.size();
    }
    // At the limit, a connection that has not said hello yet makes room: silent
    // connections cannot lock out clients that hold a ticket.
    while (open >= max_endpoints_ && !half_open_.empty()) {
      std::shared_ptr<TcpEndpoint> oldest = half_open_.front().second.lock();
      half_open_.pop_front();
      if (oldest && !oldest->torn_down() && oldest->awaiting_hello()) {
        oldest->Teardown(Status::ResourceExhausted("evicted without a hello: connection limit"));
        --open;
      }
    }
    if (open >= max_endpoints_) {
      ::close(fd);
      LogRefusal("refusing data connections from " + AddressText(address) +
                 " and others: " + std::to_string(open) +
                 " open, the limit for this process's descriptors (ulimit -n)");
      continue;
    }
    TuneSocket(fd);
    auto endpoint =
        std::make_shared<TcpEndpoint>(*this, fd, AddressText(address), /*awaiting_hello=*/true);
    {
      std::lock_guard lock(endpoints_mutex_);
      endpoints_[endpoint.get()] = endpoint;
    }
    half_open_.emplace_back(SteadyClock::now() + kHelloTimeout, endpoint);
    if (!WatchEndpoint(endpoint.get(), false).ok())
      endpoint->Teardown(Status::Unavailable("epoll"));
  }
}

void TcpFabric::PauseAccepting(int error) {
  accept_backoff_ = std::clamp(accept_backoff_ * 2, std::chrono::milliseconds(kMinAcceptPause),
                               std::chrono::milliseconds(kMaxAcceptPause));
  accept_resume_at_ = SteadyClock::now() + accept_backoff_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  LogRefusal(std::string("cannot accept data connections (") + std::strerror(error) +
             "); pausing accepts for " + std::to_string(accept_backoff_.count()) + " ms");
}

int TcpFabric::ExpireAndResume(int timeout_ms) {
  // Nothing to expire or resume (the usual case): no clock read on every pass of
  // a spinning loop (10 % of a busy round trip's samples were clock_gettime).
  if (half_open_.empty() && !accept_resume_at_) return timeout_ms;
  const auto now = SteadyClock::now();
  while (!half_open_.empty() && half_open_.front().first <= now) {
    std::shared_ptr<TcpEndpoint> endpoint = half_open_.front().second.lock();
    half_open_.pop_front();
    if (endpoint && !endpoint->torn_down() && endpoint->awaiting_hello()) {
      endpoint->Teardown(Status::Timeout("no hello from " + endpoint->peer() + " within " +
                                         std::to_string(kHelloTimeout.count()) + " s"));
    }
  }
  if (accept_resume_at_ && *accept_resume_at_ <= now) {
    accept_resume_at_.reset();
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = this;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &event);
  }
  auto next = SteadyClock::time_point::max();
  if (!half_open_.empty()) next = half_open_.front().first;
  if (accept_resume_at_) next = std::min(next, *accept_resume_at_);
  if (next == SteadyClock::time_point::max()) return timeout_ms;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  const int until = static_cast<int>(std::clamp<long long>(wait, 0, 60'000));
  return timeout_ms < 0 ? until : std::min(timeout_ms, until);
}

void TcpFabric::ProgressLoop() {
  NameThisThread("artune-tcp");
  auto last_activity = SteadyClock::now();
  auto last_parked_pass = last_activity;
  SpinWatch spin_watch;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Read on every pass: SetPolling may switch it while the thread runs.
    const bool busy = SpinsThisPass(polling(), last_activity, spin_watch);
    if (caller_gate_.callers_polling()) {
      spin_watch.Reset();  // parked time is not a lost core
      // A caller drives progress (any polling mode: an event-mode caller sleeps
      // in WaitPass): stand aside. A pass of its own now and then keeps hello
      // deadlines and accept pauses running meanwhile.
      if (caller_gate_.Park(stopping_, last_parked_pass)) {
        std::lock_guard lock(progress_mutex_);
        if (RunPassLocked(ExpireAndResume(0)) < 0) break;
      }
      continue;
    }
    std::lock_guard lock(progress_mutex_);
    // Asleep in epoll_wait with the lock held: a caller that wants to poll wakes
    // the thread (BeginCallerPolling) so that it hands the passes over.
    const bool sleep = !busy && caller_gate_.EnterSleep();
    const int events = RunPassLocked(ExpireAndResume(sleep ? -1 : 0));
    caller_gate_.LeaveSleep();
    if (events < 0) break;
    if (events > 0) {
      last_activity = SteadyClock::now();
      spin_watch.Reset();  // the pass's time was work, not a lost core
    }
  }
}

int TcpFabric::RunPassLocked(int timeout_ms) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
  if (n < 0) return errno == EINTR ? 0 : -1;
  const PassScope pass(*this);
  for (int i = 0; i < n; ++i) {
    void* target = events[i].data.ptr;
    if (target == nullptr) {
      DrainWake();
      continue;
    }
    if (target == this) {
      AcceptAll();
      continue;
    }
    auto* endpoint = static_cast<TcpEndpoint*>(target);
    if (endpoint->torn_down()) continue;  // torn down earlier in this batch
    if (events[i].events & EPOLLOUT) endpoint->OnWritable();
    if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
      endpoint->OnReadable();
    }
  }
  std::vector<std::shared_ptr<TcpEndpoint>> dead;
  {
    std::lock_guard lock(endpoints_mutex_);
    dead.swap(graveyard_);
  }
  return n;
}

void TcpFabric::TearDownLocked() {
  // The progress thread is gone: tear the remaining endpoints down here.
  TearDownEndpoints(endpoints_mutex_, endpoints_);
  {
    std::lock_guard lock(endpoints_mutex_);
    graveyard_.clear();
    endpoints_.clear();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  listen_fd_ = epoll_fd_ = -1;
}

}  // namespace artune::transport::fabric::tcp
