// The shm fabric: registration table, the unix-socket listener and connector that
// set up each connection's segment, and the progress thread.
#include "fabric/shm/shm_fabric.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace artune::transport::fabric::shm {
namespace {

constexpr uint32_t kSetupMagic = 0x61736d31;  // "asm1"
constexpr uint32_t kSetupVersion = 1;
constexpr size_t kMaxPrivateBytes = 256;
// An accepted connection must say hello within this time, or it is closed.
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// How long Connect waits for the server's answer.
constexpr int kWelcomeTimeoutSeconds = 10;
// Busy polling: idle passes before the spinning thread yields its core each pass.
constexpr uint32_t kSpinsBeforeYield = 64;

// epoll tags: the low 3 bits of epoll_event.data.u64 (endpoints are 8-aligned).
constexpr uint64_t kTagLiveness = 0;  // endpoint pointer: socket or pidfd
constexpr uint64_t kTagRing = 1;      // endpoint pointer | 1: its eventfd
constexpr uint64_t kTagHello = 2;     // (fd << 3) | 2: accepted, hello not read yet
constexpr uint64_t kTagWake = 3;
constexpr uint64_t kTagListener = 4;

struct Hello {
  uint32_t magic = kSetupMagic;
  uint32_t version = kSetupVersion;
  uint32_t private_bytes = 0;
  uint32_t reserved = 0;
  std::byte private_data[kMaxPrivateBytes] = {};
};

struct Welcome {
  uint32_t magic = kSetupMagic;
  uint32_t version = kSetupVersion;
  uint64_t segment_bytes = kSegmentBytes;
};

// Fds passed with the welcome: the segment, the server's eventfd, the client's.
constexpr int kPassedFds = 3;

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// "shm:@name" (abstract namespace) or "shm:/path" -> the socket address.
Result<std::pair<sockaddr_un, socklen_t>> ParseEndpoint(const std::string& endpoint) {
  constexpr std::string_view kPrefix = "shm:";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = endpoint.substr(std::min(endpoint.size(), kPrefix.size()));
  if (endpoint.rfind(kPrefix, 0) != 0 || name.size() < 2 ||
      name.size() >= sizeof(address.sun_path) || (name[0] != '@' && name[0] != '/')) {
    return Status::InvalidArgument("shm data endpoint '" + endpoint +
                                   "' is not shm:@name or shm:/path");
  }
  std::memcpy(address.sun_path, name.data(), name.size());
  if (name[0] == '@') address.sun_path[0] = '\0';  // abstract: no terminating NUL
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                             (name[0] == '@' ? 0 : 1));
  return std::make_pair(address, length);
}

Result<ucred> PeerCredentials(int fd) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return Status::FromErrno("SO_PEERCRED", errno);
  }
  if (credentials.uid != ::geteuid()) {
    return Status::PermissionDenied("shm peer runs as uid " + std::to_string(credentials.uid) +
                                    ", this process as " + std::to_string(::geteuid()));
  }
  return credentials;
}

// The segment: a memfd private to this user, sized, and sealed so that neither
// side can shrink it under the other's mapping (which would fault on access).
Result<int> CreateSegment() {
  int fd = ::memfd_create("artune-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Status::FromErrno("memfd_create for an shm connection", errno);
  if (::fchmod(fd, 0600) != 0 || ::ftruncate(fd, static_cast<off_t>(kSegmentBytes)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    Status error = Status::FromErrno("sizing and sealing the shm segment", errno);
    ::close(fd);
    return error;
  }
  return fd;
}

Result<void*> MapSegment(int fd, bool check_seals) {
  if (check_seals) {
    struct stat info {};
    const int seals = ::fcntl(fd, F_GET_SEALS);
    if (::fstat(fd, &info) != 0 || static_cast<uint64_t>(info.st_size) != kSegmentBytes ||
        seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
      return Status::ProtocolError("the shm segment from the server is not a sealed memfd of " +
                                   std::to_string(kSegmentBytes) + " bytes");
    }
  }
  void* segment = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (segment == MAP_FAILED) return Status::FromErrno("mmap of the shm segment", errno);
  return segment;
}

}  // namespace

Result<std::string> HostIdentity() {
  std::string boot_id;
  if (FILE* file = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char line[64] = {};
    if (std::fgets(line, sizeof(line), file) != nullptr) boot_id = line;
    std::fclose(file);
  }
  while (!boot_id.empty() && (boot_id.back() == '\n' || boot_id.back() == ' ')) boot_id.pop_back();
  struct stat netns {};
  if (boot_id.empty() || ::stat("/proc/self/ns/net", &netns) != 0) {
    return Status::Unavailable(
        "cannot tell this host's identity for shm (/proc/sys/kernel/"
        "random/boot_id, /proc/self/ns/net)");
  }
  return boot_id + "/" + std::to_string(netns.st_ino) + "/" + std::to_string(::geteuid());
}

ShmReadCounters& ReadCounters() {
  static ShmReadCounters counters;
  return counters;
}

ShmFabric::ShmFabric(PollingMode polling) : polling_(polling) {}

ShmFabric::~ShmFabric() { Shutdown(); }

Status ShmFabric::Init() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Status::FromErrno("epoll_create1 for the shm fabric", errno);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::FromErrno("eventfd for the shm fabric", errno);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kTagWake;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    return Status::FromErrno("epoll_ctl(eventfd)", errno);
  }
  progress_ = std::thread([this] { ProgressLoop(); });
  return Status::Ok();
}

Result<MemoryKeys> ShmFabric::Register(std::byte* addr, uint64_t length) {
  if (addr == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory region");
  }
  std::lock_guard lock(regions_mutex_);
  uint32_t key = 0;
  do {
    key = next_key_++;
  } while (key == 0 || regions_.contains(key));
  auto region = std::make_shared<Region>();
  region->addr = addr;
  region->length = length;
  regions_[key] = std::move(region);
  return MemoryKeys{key, key};
}

void ShmFabric::Deregister(const MemoryKeys& keys) {
  std::shared_ptr<Region> region;
  {
    std::lock_guard lock(regions_mutex_);
    auto it = regions_.find(keys.lkey);
    if (it == regions_.end()) return;
    region = std::move(it->second);
    regions_.erase(it);
  }
  // Owner-side copies stop at their next fragment. (A grant already given lets the
  // peer finish its process_vm_readv: that touches the peer's memory, not ours, and
  // the engine revokes its offers, which waits for grants, before it frees.)
  std::lock_guard lock(region->mutex);
  region->deregistered = true;
}

std::shared_ptr<Region> ShmFabric::FindRegion(uint32_t lkey) {
  std::lock_guard lock(regions_mutex_);
  auto it = regions_.find(lkey);
  return it == regions_.end() ? nullptr : it->second;
}

Result<std::string> ShmFabric::Listen(const std::string& /*host*/, AcceptHandler on_accept) {
  if (listen_fd_ >= 0) return Status::AlreadyExists("the shm fabric is already listening");
  // The abstract namespace leaves no file behind, even after SIGKILL; anyone in this
  // network namespace may connect, so peers of another uid are refused (SO_PEERCRED)
  // and the random part keeps the name from being squatted in advance.
  RandomKeys random;
  char name[96];
  std::snprintf(name, sizeof(name), "@artune-shm-%u-%d-%08x%08x", ::geteuid(), ::getpid(),
                random.Next(), random.Next());
  ARTUNE_ASSIGN_OR_RETURN(auto address, ParseEndpoint(std::string("shm:") + name));
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket for the shm listener", errno);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address.first), address.second) != 0 ||
      ::listen(fd, 128) != 0) {
    Status error = Status::FromErrno(std::string("bind/listen shm endpoint ") + name, errno);
    ::close(fd);
    return error;
  }
  on_accept_ = std::move(on_accept);
  listen_fd_ = fd;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kTagListener;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    return Status::FromErrno("epoll_ctl(shm listener)", errno);
  }
  return std::string("shm:") + name;
}

Result<std::shared_ptr<Endpoint>> ShmFabric::Connect(const std::string& endpoint,
                                                     std::span<const std::byte> private_data) {
  if (private_data.size() > kMaxPrivateBytes) {
    return Status::InvalidArgument("connect private data of " +
                                   std::to_string(private_data.size()) + " bytes (limit " +
                                   std::to_string(kMaxPrivateBytes) + ")");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto address, ParseEndpoint(endpoint));
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket for the shm connection", errno);
  auto fail = [&](Status status, std::initializer_list<int> more = {}) {
    ::close(fd);
    CloseAll(more);
    return Status::Unavailable(status.WithContext("shm connection to " + endpoint).message());
  };
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address.first), address.second) != 0) {
    return fail(Status::FromErrno("connect", errno));
  }
  // The server must be this user's too: an abstract name can be bound by anyone.
  Result<ucred> server = PeerCredentials(fd);
  if (!server.ok()) return fail(server.status());
  Hello hello;
  hello.private_bytes = static_cast<uint32_t>(private_data.size());
  if (!private_data.empty()) {
    std::memcpy(hello.private_data, private_data.data(), private_data.size());
  }
  if (::send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(hello))) {
    return fail(Status::FromErrno("send hello", errno));
  }
  timeval timeout{kWelcomeTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  Welcome welcome;
  iovec iov{&welcome, sizeof(welcome)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kPassedFds)] = {};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t n = 0;
  do {
    n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  int fds[kPassedFds] = {-1, -1, -1};
  int received = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int passed = -1;
      std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (received < kPassedFds) {
        fds[received++] = passed;
      } else {
        ::close(passed);
      }
    }
  }
  if (n <= 0) {
    return fail(n == 0 ? Status::Unavailable("refused by the server (connection closed)")
                       : Status::FromErrno("receive the server's answer", errno),
                {fds[0], fds[1], fds[2]});
  }
  if (n != sizeof(welcome) || welcome.magic != kSetupMagic || welcome.version != kSetupVersion ||
      welcome.segment_bytes != kSegmentBytes || received != kPassedFds ||
      (message.msg_flags & MSG_CTRUNC) != 0) {
    return fail(Status::ProtocolError("malformed answer from the server"),
                {fds[0], fds[1], fds[2]});
  }
  Result<void*> segment = MapSegment(fds[0], /*check_seals=*/true);
  ::close(fds[0]);
  if (!segment.ok()) return fail(segment.status(), {fds[1], fds[2]});
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  Link link;
  link.socket = fd;
  link.peer_wake = fds[1];
  link.own_wake = fds[2];
  link.peer_pid = server->pid;
  link.pidfd = PidfdOpen(server->pid);
  link.segment = *segment;
  link.is_server = false;
  link.peer = endpoint + " (pid " + std::to_string(server->pid) + ")";
  auto created = std::make_shared<ShmEndpoint>(*this, std::move(link));
  std::lock_guard lock(endpoints_mutex_);
  if (stopping_) return Status::Cancelled("the shm fabric is shutting down");
  endpoints_[created.get()] = created;
  return std::shared_ptr<Endpoint>(created);
}

void ShmFabric::AcceptAll() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or out of descriptors: the next wake-up retries
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.u64 = (static_cast<uint64_t>(fd) << 3) | kTagHello;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      ::close(fd);
      continue;
    }
    half_open_[fd] = std::chrono::steady_clock::now() + kHelloTimeout;
  }
}

void ShmFabric::OnHello(int fd) {
  half_open_.erase(fd);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  Status status = AcceptHello(fd);
  if (!status.ok()) {
    std::fprintf(stderr, "artune transport: shm connection refused: %s\n",
                 status.ToString().c_str());
  }
}

Status ShmFabric::AcceptHello(int fd) {
  Hello hello;
  const ssize_t n = ::recv(fd, &hello, sizeof(hello), MSG_DONTWAIT);
  if (n != sizeof(hello) || hello.magic != kSetupMagic || hello.version != kSetupVersion ||
      hello.private_bytes > kMaxPrivateBytes) {
    ::close(fd);
    return Status::ProtocolError("malformed hello (" + std::to_string(n) + " bytes)");
  }
  Result<ucred> client = PeerCredentials(fd);
  if (!client.ok()) {
    ::close(fd);
    return client.status();
  }
  Result<int> memfd = CreateSegment();
  if (!memfd.ok()) {
    ::close(fd);
    return memfd.status();
  }
  Link link;
  link.socket = fd;
  link.own_wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  link.peer_wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  Result<void*> segment = MapSegment(*memfd, /*check_seals=*/false);
  if (link.own_wake < 0 || link.peer_wake < 0 || !segment.ok()) {
    Status error = segment.ok() ? Status::FromErrno("eventfd", errno) : segment.status();
    CloseAll({fd, *memfd, link.own_wake, link.peer_wake});
    return error;
  }
  link.peer_pid = client->pid;
  link.pidfd = PidfdOpen(client->pid);
  link.segment = *segment;
  link.is_server = true;
  link.peer = "shm pid " + std::to_string(client->pid);
  // The endpoint owns every descriptor of the link from here on (the memfd aside).
  auto endpoint = std::make_shared<ShmEndpoint>(*this, link);
  {
    std::lock_guard lock(endpoints_mutex_);
    endpoints_[endpoint.get()] = endpoint;
  }
  Status accepted =
      on_accept_ ? on_accept_(endpoint,
                              std::span<const std::byte>(hello.private_data, hello.private_bytes))
                 : Status::Internal("a hello arrived on a fabric that does not listen");
  if (accepted.ok()) {
    Welcome welcome;
    iovec iov{&welcome, sizeof(welcome)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kPassedFds)] = {};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * kPassedFds);
    // The client's view: its peer's eventfd is ours, its own is the one we signal.
    const int passed[kPassedFds] = {*memfd, link.own_wake, link.peer_wake};
    std::memcpy(CMSG_DATA(c), passed, sizeof(passed));
    if (::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT) !=
        static_cast<ssize_t>(sizeof(welcome))) {
      accepted = Status::FromErrno("send the welcome", errno);
    }
  }
  ::close(*memfd);
  if (!accepted.ok()) {
    endpoint->Teardown(accepted);
    return accepted.WithContext("connection from " + link.peer);
  }
  return Status::Ok();
}

Status ShmFabric::Watch(ShmEndpoint* endpoint) {
  const Link& link = endpoint->link();
  const auto tag = reinterpret_cast<uint64_t>(endpoint);
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.u64 = tag | kTagLiveness;
  int rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.socket, &event);
  if (rc == 0 && link.pidfd >= 0) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.pidfd, &event);
  // Edge-triggered: each write of the peer is one wake-up, and the counter never
  // needs reading (a system call saved per wake-up).
  event.events = EPOLLIN | EPOLLET;
  event.data.u64 = tag | kTagRing;
  if (rc == 0) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.own_wake, &event);
  if (rc != 0) return Status::FromErrno("epoll_ctl(shm connection " + link.peer + ")", errno);
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) {
    started_.push_back(it->second);
    started_changed_ = true;
  }
  Wake();
  return Status::Ok();
}

void ShmFabric::Unwatch(ShmEndpoint* endpoint) {
  const Link& link = endpoint->link();
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.socket, nullptr);
  if (link.pidfd >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.pidfd, nullptr);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.own_wake, nullptr);
}

void ShmFabric::Forget(ShmEndpoint* endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) return;
  std::erase_if(started_, [endpoint](const auto& e) { return e.get() == endpoint; });
  started_changed_ = true;
  graveyard_.push_back(std::move(it->second));
  endpoints_.erase(it);
}

void ShmFabric::NoteOneCopyRefused(const std::string& peer, int error) {
  ReadCounters().cma_refused.fetch_add(1, std::memory_order_relaxed);
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  std::fprintf(stderr,
               "artune transport: process_vm_readv from %s refused (%s): shm reads fall back "
               "to a copy through the ring by the peer (slower; one-copy reads need ptrace "
               "rights: same user, kernel.yama.ptrace_scope 0 or CAP_SYS_PTRACE)\n",
               peer.c_str(), std::strerror(error));
}

void ShmFabric::WaitForEvents(int timeout_ms) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const uint64_t data = events[i].data.u64;
    const uint64_t tag = data & 7;
    if (data == kTagWake) {
      uint64_t value = 0;
      (void)!::read(wake_fd_, &value, sizeof(value));
    } else if (data == kTagListener) {
      AcceptAll();
    } else if (tag == kTagHello) {
      OnHello(static_cast<int>(data >> 3));
    } else if (tag == kTagLiveness) {
      auto* endpoint = reinterpret_cast<ShmEndpoint*>(data);
      if (!endpoint->torn_down()) endpoint->OnEvent();
    }
    // kTagRing: the wake-up itself was the point; the rings are polled below.
  }
}

// The thread running a pass: a completion callback that waits for a call of its
// own must not try to run a nested pass (std::mutex is not recursive).
thread_local bool in_shm_pass = false;

bool ShmFabric::PollEndpointsLocked() {
  {
    std::lock_guard lock(endpoints_mutex_);
    if (started_changed_) {
      polled_ = started_;
      started_changed_ = false;
    }
    graveyard_.clear();
  }
  in_shm_pass = true;
  bool progressed = false;
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) progressed |= endpoint->Poll();
  }
  // Sockets (liveness, accepts) are looked at every so often while data flows.
  if ((++passes_ & 255) == 0) WaitForEvents(0);
  in_shm_pass = false;
  return progressed;
}

void ShmFabric::SleepLocked() {
  in_shm_pass = true;
  bool must_not_sleep = false;
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) must_not_sleep |= endpoint->PrepareToSleep();
  }
  int timeout_ms = must_not_sleep ? 0 : -1;
  if (!half_open_.empty()) {
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(half_open_, [&](const auto& entry) {
      if (entry.second > now) return false;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, entry.first, nullptr);
      ::close(entry.first);
      return true;
    });
    if (timeout_ms < 0) timeout_ms = 1000;
  }
  // Asleep holding the pass: a caller that wants to poll wakes the thread
  // (BeginCallerPolling) so that it hands the passes over.
  progress_sleeping_.store(timeout_ms != 0, std::memory_order_relaxed);
  WaitForEvents(timeout_ms);
  progress_sleeping_.store(false, std::memory_order_relaxed);
  for (const auto& endpoint : polled_) {
    if (!endpoint->torn_down()) endpoint->Awake();
  }
  in_shm_pass = false;
}

void ShmFabric::ProgressLoop() {
  using Clock = std::chrono::steady_clock;
  auto last_activity = Clock::now();
  uint32_t idle_passes = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Read on every pass: SetPolling may switch it while the thread runs. Adaptive
    // spins while there was activity within poll_spin_us, then sleeps.
    const PollingMode mode = polling_.load(std::memory_order_relaxed);
    const bool spinning =
        mode == PollingMode::kBusy ||
        (mode == PollingMode::kAdaptive &&
         Clock::now() - last_activity <
             std::chrono::microseconds(poll_spin_us_.load(std::memory_order_relaxed)));
    if (spinning && callers_polling_.load(std::memory_order_acquire) > 0) {
      // A caller drives progress: stand aside rather than spin against it. The
      // bounded wait keeps liveness, accepts and hello deadlines running meanwhile.
      std::unique_lock park(park_mutex_);
      park_changed_.wait_for(park, std::chrono::milliseconds(10), [this] {
        return callers_polling_.load(std::memory_order_acquire) == 0 ||
               stopping_.load(std::memory_order_relaxed);
      });
      park.unlock();
      if (callers_polling_.load(std::memory_order_acquire) > 0) {
        std::lock_guard lock(progress_mutex_);
        PollEndpointsLocked();
        in_shm_pass = true;
        WaitForEvents(0);
        in_shm_pass = false;
      }
      last_activity = Clock::now();
      continue;
    }
    bool progressed = false;
    {
      std::lock_guard lock(progress_mutex_);
      progressed = PollEndpointsLocked();
      if (!spinning && !progressed) {
        SleepLocked();
        continue;
      }
    }
    if (progressed) last_activity = Clock::now();
    idle_passes = progressed ? 0 : idle_passes + 1;
    // A spinning thread that found nothing for a while lets the threads it waits
    // for (the caller, the handlers) run: on a host with few cores they share
    // them, and a hand-off that waits for a time slice costs milliseconds.
    if (idle_passes >= kSpinsBeforeYield) ::sched_yield();
  }
}

void ShmFabric::BeginCallerPolling() {
  callers_polling_.fetch_add(1, std::memory_order_acq_rel);
  // Adaptive after an idle spell: the progress thread sleeps holding the pass.
  if (progress_sleeping_.load(std::memory_order_relaxed)) {
    std::lock_guard shutdown_lock(shutdown_mutex_);  // Shutdown closes the eventfd
    if (!shut_down_) Wake();
  }
}

void ShmFabric::EndCallerPolling() {
  if (callers_polling_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // The last caller left: the progress thread takes over again at once.
    std::lock_guard park(park_mutex_);
    park_changed_.notify_one();
  }
}

bool ShmFabric::Poll() {
  if (in_shm_pass) return false;
  std::unique_lock lock(progress_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || stopping_.load(std::memory_order_relaxed)) return false;
  return PollEndpointsLocked();
}

void ShmFabric::SetPollSpin(uint32_t spin_us) {
  poll_spin_us_.store(spin_us, std::memory_order_relaxed);
}

void ShmFabric::Wake() {
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
}

void ShmFabric::SetPolling(PollingMode mode) {
  std::lock_guard shutdown_lock(shutdown_mutex_);
  if (polling_.exchange(mode) == mode || shut_down_) return;
  Wake();
}

void ShmFabric::Shutdown() {
  std::lock_guard shutdown_lock(shutdown_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  stopping_ = true;
  Wake();
  {
    std::lock_guard park(park_mutex_);
    park_changed_.notify_all();
  }
  if (progress_.joinable()) progress_.join();
  // No caller runs a pass any more either (Poll checks stopping_ under the lock).
  std::lock_guard progress_lock(progress_mutex_);
  std::vector<std::shared_ptr<ShmEndpoint>> remaining;
  {
    std::lock_guard lock(endpoints_mutex_);
    for (auto& [raw, endpoint] : endpoints_) remaining.push_back(endpoint);
  }
  for (auto& endpoint : remaining) {
    endpoint->Teardown(Status::Cancelled("the transport is shutting down"));
  }
  {
    std::lock_guard lock(endpoints_mutex_);
    graveyard_.clear();
    started_.clear();
    endpoints_.clear();
  }
  polled_.clear();
  for (auto& [fd, deadline] : half_open_) ::close(fd);
  half_open_.clear();
  CloseAll({listen_fd_, wake_fd_, epoll_fd_});
  listen_fd_ = wake_fd_ = epoll_fd_ = -1;
}

}  // namespace artune::transport::fabric::shm
