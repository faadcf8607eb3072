// The relay's start, its transport handlers, the event loop, the return path and
// the carried connections' events (its peer relays: relay_peers.cc).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "relay_impl.h"

namespace artune::relay {
namespace {

constexpr auto kLoopTick = std::chrono::milliseconds(100);
// How long the Open handler waits for the loop's verdict (which may include
// dialling the origin relay back: the transport's connect deadline bounds that).
constexpr auto kOpenVerdictWait = std::chrono::seconds(15);

}  // namespace

std::string HostOf(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

std::string JoinHostPort(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

void AddStats(transport::ProtocolStats* sum, const transport::Stats& stats) {
  for (int p = 0; p < transport::kProtocolCount; ++p) {
    sum[p].slices += stats.by_protocol[p].slices;
    sum[p].bytes += stats.by_protocol[p].bytes;
    for (int b = 0; b < transport::kLog2BucketCount; ++b) {
      sum[p].slices_by_bucket[b] += stats.by_protocol[p].slices_by_bucket[b];
    }
  }
}

bool IsLocalAddress(const std::string& host) {
  if (transport::IsLoopbackHost(host)) return true;
  in6_addr want6{};
  in_addr want4{};
  const bool v4 = inet_pton(AF_INET, host.c_str(), &want4) == 1;
  const bool v6 = !v4 && inet_pton(AF_INET6, host.c_str(), &want6) == 1;
  if (!v4 && !v6) return false;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* entry = list; entry != nullptr && !found; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    if (v4 && entry->ifa_addr->sa_family == AF_INET) {
      found = reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr.s_addr == want4.s_addr;
    } else if (v6 && entry->ifa_addr->sa_family == AF_INET6) {
      found = std::memcmp(&reinterpret_cast<sockaddr_in6*>(entry->ifa_addr)->sin6_addr, &want6,
                          sizeof want6) == 0;
    }
  }
  freeifaddrs(list);
  return found;
}

void OpenVerdict::Decide(Status verdict) {
  {
    std::lock_guard lock(mutex);
    if (status.has_value()) return;
    status = std::move(verdict);
  }
  decided.notify_all();
}

Status OpenVerdict::Await(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex);
  if (!decided.wait_for(lock, wait, [this] { return status.has_value(); })) {
    return Status::Unavailable("relay: no verdict on the connection within " +
                               std::to_string(wait.count()) +
                               " ms (the relay is stopping or "
                               "stuck); retry");
  }
  return *status;
}

Result<std::unique_ptr<Relay>> Relay::Start(RelayOptions options) {
  auto relay = std::make_unique<RelayImpl>(std::move(options));
  ARTUNE_RETURN_IF_ERROR(relay->Init());
  return std::unique_ptr<Relay>(std::move(relay));
}

RelayImpl::RelayImpl(RelayOptions options) : options_(std::move(options)) {
  std::random_device random;
  session_ = (uint64_t{random()} << 32) | random();
}

RelayImpl::~RelayImpl() { Shutdown(); }

Status RelayImpl::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Status::FromErrno("relay: epoll/eventfd", errno);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  if (!options_.listen.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(auto server, transport::Server::Start(options_.config, options_.listen,
                                                                  options_.credentials));
    RegisterHandlers(*server);
    address_ = server->address();
    options_.config = server->config();  // what FollowLiveConfig compares against
    // What this relay sends back goes by its clients: a watcher of the server
    // (`artune dashboard --server`) sees both directions.
    server->SetExtraStats([this] { return ClientStats(); });
    servers_[HostOf(options_.listen)] = std::move(server);
  }
  if (!options_.control_socket.empty()) ARTUNE_RETURN_IF_ERROR(StartControlSocket());
  loop_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

std::string RelayImpl::address() const { return address_; }

std::string RelayImpl::fabric() const {
  if (servers_.empty()) return "";
  const transport::Server& server = *servers_.begin()->second;
  std::string name;
  switch (server.fabric()) {
    case transport::FabricKind::kTcp:
      name = "tcp";
      break;
    case transport::FabricKind::kVerbs:
      name = "verbs";
      break;
    case transport::FabricKind::kShm:
      name = "shm";
      break;
    case transport::FabricKind::kAuto:
      name = "auto";
      break;
  }
  if (!server.local_endpoint().empty() && name != "shm") name += " (+ shm on this host)";
  return name;
}

transport::Stats RelayImpl::ClientStats() const {
  transport::Stats sum;
  std::lock_guard lock(stats_mutex_);
  for (int p = 0; p < transport::kProtocolCount; ++p) sum.by_protocol[p] = dropped_stats_[p];
  for (const auto& [address, peer] : peers_) {
    const transport::Stats stats = peer->client->stats();
    AddStats(sum.by_protocol, stats);
    sum.calls_started += stats.calls_started;
    sum.calls_completed += stats.calls_completed;
    sum.calls_failed += stats.calls_failed;
  }
  return sum;
}

RelayCounters RelayImpl::counters() const {
  RelayCounters counters;
  counters.connections = connections_.load();
  counters.bytes = bytes_.load();
  counters.queued_bytes = queued_bytes_.load();
  counters.copied_bytes = copied_bytes_.load();
  counters.held_bytes = held_->load();
  std::lock_guard lock(stats_mutex_);
  for (int p = 0; p < transport::kProtocolCount; ++p) counters.by_protocol[p] = dropped_stats_[p];
  for (const auto& [address, peer] : peers_) AddStats(counters.by_protocol, peer->client->stats());
  for (const auto& [host, server] : servers_) AddStats(counters.by_protocol, server->stats());
  return counters;
}

void RelayImpl::Shutdown() {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof one);
  if (loop_.joinable()) loop_.join();
  // Setup jobs end within the control deadline; then no one waits for them.
  jobs_.JoinAll();
  // The loop has stopped: reset what it carried, then stop the servers (their
  // handlers post into an inbox nobody drains any more, which is harmless; they
  // see stopping_ under the state lock and leave the connections alone).
  std::unique_lock state(state_mutex_);
  for (auto& [address, waiters] : setups_) {
    for (PeerReady& waiter : waiters) waiter(Status::Unavailable("relay: stopping"));
  }
  setups_.clear();
  std::vector<Event> undone;  // let go outside the inbox lock: a client's end may Post
  {
    std::lock_guard lock(inbox_mutex_);
    undone.swap(inbox_);
  }
  for (Event& event : undone) {
    if (auto* open = std::get_if<OpenEvent>(&event)) {
      open->verdict->Decide(Status::Unavailable("relay: stopping"));
    }
  }
  undone.clear();
  for (auto& [fd, since] : askers_) close(fd);
  askers_.clear();
  while (!origin_conns_.empty()) CloseConn(*origin_conns_.begin()->second, true, false);
  while (!target_conns_.empty()) CloseConn(*target_conns_.begin()->second, true, false);
  for (auto& [fd, listener] : listeners_) close(fd);
  listeners_.clear();
  for (auto& [host, server] : servers_) server->Shutdown();
  // Every handler is over now: the sockets closed under their writes close, and
  // their HandlerWroteEvents (which point at those connections) go unhandled.
  for (auto& [pointer, conn] : closing_conns_) {
    CloseSocket(*conn, conn->close_after_write.value_or(true));
  }
  {
    std::lock_guard lock(inbox_mutex_);
    undone.swap(inbox_);
  }
  undone.clear();
  closing_conns_.clear();
  retired_peers_.clear();
  {
    std::lock_guard lock(stats_mutex_);
    for (auto& [address, peer] : peers_) AddStats(dropped_stats_, peer->client->stats());
    peers_.clear();
  }
  if (control_fd_ >= 0) {
    close(control_fd_);
    unlink(options_.control_socket.c_str());
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  epoll_fd_ = wake_fd_ = control_fd_ = -1;
}

void RelayImpl::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

// Handlers run on the transport's progress thread: they decode, queue and return.
void RelayImpl::RegisterHandlers(transport::Server& server) {
  transport::HandlerOptions non_blocking{.non_blocking = true};
  // Open blocks (a worker thread) until the loop has the connection and a way
  // back to the origin, or says why not: the origin sends the program's bytes only
  // after this reply, and resets the program's connection on an error.
  server.RegisterHandler(
      std::string(kOpenMethod),
      [this](const transport::Message& request, transport::ResponseWriter&) -> Status {
        ARTUNE_ASSIGN_OR_RETURN(OpenRequest open, DecodeOpen(request));
        // Never an open proxy: only addresses of this host are dialled.
        if (!IsLocalAddress(open.host)) {
          return Status::PermissionDenied("relay: " + open.host +
                                          " is not an address of this host; a relay only "
                                          "dials servers on its own host");
        }
        auto verdict = std::make_shared<OpenVerdict>();
        Post(OpenEvent{std::move(open), verdict});
        return verdict->Await(kOpenVerdictWait);
      });
  server.RegisterHandler(
      std::string(kDataMethod),
      [this](const transport::Message& request, transport::ResponseWriter&) -> Status {
        ARTUNE_ASSIGN_OR_RETURN(ChunkView chunk, ViewChunk(request));
        if (!TryWriteNow(chunk, request)) {
          Post(DataEvent{HeldChunk{chunk.header, Keep(chunk, request, 0)}});
        }
        return Status::Ok();
      },
      non_blocking);
  server.RegisterHandler(
      std::string(kAckMethod),
      [this](const transport::Message& request, transport::ResponseWriter&) -> Status {
        ARTUNE_ASSIGN_OR_RETURN(Ack ack, DecodeAck(request));
        Post(AckEvent{ack});
        return Status::Ok();
      },
      non_blocking);
  server.RegisterHandler(
      std::string(kPingMethod),
      [](const transport::Message&, transport::ResponseWriter&) { return Status::Ok(); },
      non_blocking);
}

void RelayImpl::Post(Event event) {
  bool was_empty = false;
  {
    std::lock_guard lock(inbox_mutex_);
    was_empty = inbox_.empty();
    inbox_.push_back(std::move(event));
  }
  // Whoever made the inbox non-empty woke the loop, and the loop drains all of it
  // after every wake-up: one eventfd write per batch, not per event.
  if (!was_empty) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void RelayImpl::Loop() {
  loop_thread_of = this;
  // Told apart from the transport's threads (artune-shm, ...) in top -H, perf and
  // bench/relay-percall --threads; every thread would show the program's name.
  // Not "artune-...": that prefix is the transport's (tests tell its threads by it).
  pthread_setname_np(pthread_self(), "relay-loop");
  epoll_event events[64];
  while (!stopping_.load()) {
    const int ready = epoll_wait(epoll_fd_, events, 64, static_cast<int>(kLoopTick.count()));
    std::lock_guard state(state_mutex_);
    ForgiveOwnPause();
    for (int i = 0; i < ready && !stopping_.load(); ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        (void)!read(wake_fd_, &count, sizeof count);
      } else if (fd == control_fd_) {
        AcceptAskers();
      } else if (askers_.contains(fd)) {
        AnswerQuestion(fd);
      } else if (auto listener = listeners_.find(fd); listener != listeners_.end()) {
        AcceptCarried(listener->second);
      } else if (auto conn = conn_by_fd_.find(fd); conn != conn_by_fd_.end()) {
        OnConnEvents(*conn->second, events[i].events);
      }
    }
    DrainInbox();
    if (std::chrono::steady_clock::now() - last_ping_ >= kPingInterval) {
      PingPeers();
      FollowLiveConfig();
      DropSilentAskers();
    }
  }
}

void RelayImpl::DrainInbox() {
  std::vector<Event> events;
  {
    std::lock_guard lock(inbox_mutex_);
    events.swap(inbox_);
  }
  for (Event& event : events) {
    std::visit([this](auto& e) { Handle(e); }, event);
  }
}

Result<std::string> RelayImpl::ReturnAddressToward(const std::string& host) {
  std::string local = "127.0.0.1";
  if (!transport::IsLoopbackHost(host)) {
    const bool v6 = host.find(':') != std::string::npos;
    sockaddr_storage target{};
    socklen_t length = 0;
    if (v6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&target);
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(9);
      if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) != 1) {
        return Status::InvalidArgument("relay: " + host + " is not a numeric address");
      }
      length = sizeof *in6;
    } else {
      auto* in4 = reinterpret_cast<sockaddr_in*>(&target);
      in4->sin_family = AF_INET;
      in4->sin_port = htons(9);
      if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) != 1) {
        return Status::InvalidArgument("relay: " + host + " is not a numeric address");
      }
      length = sizeof *in4;
    }
    // A connected UDP socket sends nothing; getsockname gives the route's source.
    const int probe = socket(target.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return Status::FromErrno("relay: socket", errno);
    sockaddr_storage source{};
    socklen_t source_length = sizeof source;
    const bool routed =
        connect(probe, reinterpret_cast<sockaddr*>(&target), length) == 0 &&
        getsockname(probe, reinterpret_cast<sockaddr*>(&source), &source_length) == 0;
    close(probe);
    if (!routed) return Status::Unavailable("relay: no route to " + host);
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        source.ss_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&source)->sin6_addr)
            : &reinterpret_cast<sockaddr_in*>(&source)->sin_addr;
    inet_ntop(source.ss_family, raw, text, sizeof text);
    local = text;
  }
  if (auto it = servers_.find(local); it != servers_.end()) return it->second->address();
  ARTUNE_ASSIGN_OR_RETURN(
      auto server,
      transport::Server::Start(options_.config, JoinHostPort(local, 0), options_.credentials));
  RegisterHandlers(*server);
  std::string address = server->address();
  std::lock_guard lock(stats_mutex_);
  servers_[local] = std::move(server);
  return address;
}

void RelayImpl::Handle(OpenEvent& event) {
  if (FindConn(Toward::kTarget, event.open.session, event.open.conn) != nullptr) {
    return event.verdict->Decide(Status::Ok());
  }
  WithPeer(event.open.origin_address,
           [this, open = event.open, verdict = event.verdict](Result<std::shared_ptr<Peer>> peer) {
             verdict->Decide(OpenTargetConn(open, std::move(peer)));
           });
}

// Ok once the connection exists (a server that refuses it is told through the
// data path, as a reset); kUnavailable when the origin relay cannot be reached.
Status RelayImpl::OpenTargetConn(const OpenRequest& open, Result<std::shared_ptr<Peer>> peer) {
  if (FindConn(Toward::kTarget, open.session, open.conn) != nullptr) return Status::Ok();
  auto conn = std::make_unique<Conn>(Toward::kTarget, GrpcSplitter::Side::kServer);
  conn->session = open.session;
  conn->id = open.conn;
  if (!peer.ok()) {
    const std::string why = "relay: cannot reach the origin relay " + open.origin_address +
                            " to carry a connection back: " + peer.status().ToString();
    Log(why);
    return Status::Unavailable(why);
  }
  conn->peer = *peer;
  sockaddr_storage target{};
  socklen_t length = 0;
  if (auto* in4 = reinterpret_cast<sockaddr_in*>(&target);
      inet_pton(AF_INET, open.host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(open.port);
    length = sizeof *in4;
  } else if (auto* in6 = reinterpret_cast<sockaddr_in6*>(&target);
             inet_pton(AF_INET6, open.host.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(open.port);
    length = sizeof *in6;
  }
  conn->fd =
      length == 0 ? -1 : socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (conn->fd >= 0 && connect(conn->fd, reinterpret_cast<sockaddr*>(&target), length) != 0 &&
      errno != EINPROGRESS) {
    close(conn->fd);
    conn->fd = -1;
  }
  if (conn->fd >= 0) {
    const int one = 1;
    setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  conn->connecting = true;
  Conn& added = AddConn(std::move(conn));
  if (added.fd < 0) {
    CloseConn(added, true, true);
    return Status::Ok();
  }
  UpdateInterest(added);
  return Status::Ok();
}

void RelayImpl::Handle(DataEvent& event) {
  const DataHeader& header = event.chunk.header;
  Conn* conn = FindConn(header.toward, header.session, header.conn);
  if (conn == nullptr) return;  // reset or closed already
  if (conn->peer) conn->peer->last_heard = std::chrono::steady_clock::now();
  Deliver(*conn, std::move(event.chunk));
}

void RelayImpl::Handle(WriteEvent& event) {
  Conn* conn = FindConn(event.self, event.session, event.conn);
  if (conn != nullptr && !conn->connecting) WriteSocket(*conn);
}

void RelayImpl::Handle(AckEvent& event) {
  Conn* conn = FindConn(event.ack.toward, event.ack.session, event.ack.conn);
  if (conn != nullptr && conn->peer) conn->peer->last_heard = std::chrono::steady_clock::now();
  if (conn == nullptr || event.ack.written <= conn->acked || event.ack.written > conn->sent) return;
  conn->acked = event.ack.written;
  UpdateInterest(*conn);
}

void RelayImpl::Handle(ConnFailedEvent& event) {
  Conn* conn = FindConn(event.self, event.session, event.conn);
  if (conn == nullptr) return;
  Log("relay: a carried connection (" + ConnName(*conn) + ") failed: " + event.why);
  CloseConn(*conn, true, false);
}

}  // namespace artune::relay
