// The shm fabric's connection setup: the listener on an abstract unix socket,
// Connect, and the hello/welcome exchange that creates, seals and passes each
// connection's segment and doorbell (shm_fabric.h says why each step is there);
// and the host identity a client must share to use a server's listener.
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>

#include "fabric/shm/shm_doorbell.h"
#include "fabric/shm/shm_fabric.h"
#include "refusal_log.h"

namespace artune::transport::fabric::shm {
namespace {

constexpr uint32_t kSetupMagic = 0x61736d31;  // "asm1"
// 2: the offer tables after the rings (shm_offers.h); 3: a socketpair doorbell
// (shm_doorbell.h) instead of two eventfds.
constexpr uint32_t kSetupVersion = 3;
constexpr size_t kMaxPrivateBytes = 256;
// An accepted connection must say hello within this time, or it is closed.
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// Pauses of the listener after accept failed for want of descriptors or memory.
constexpr auto kMinAcceptPause = std::chrono::milliseconds(50);
constexpr auto kMaxAcceptPause = std::chrono::milliseconds(1000);
// How long Connect waits for the server's answer.
constexpr int kWelcomeTimeoutSeconds = 10;

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

// Fds passed with the welcome: the segment and the client's end of the doorbell.
constexpr int kPassedFds = 2;

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

// The client's half of the handshake's answer: receives the server's Welcome and
// the descriptors passed with it (the first kPassedFds into `fds`, counted in
// `received`; any more are closed). `truncated`: the kernel cut the control
// data. Returns what recvmsg did.
ssize_t ReceiveWelcome(int fd, Welcome& welcome, int (&fds)[kPassedFds], int& received,
                       bool& truncated) {
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
  const int saved_errno = errno;
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
  truncated = (message.msg_flags & MSG_CTRUNC) != 0;
  errno = saved_errno;  // the caller reports recvmsg's error, not close's
  return n;
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

std::string HostIdentityDigest(const std::string& identity, const std::string& salt) {
  const std::string salted = salt + identity;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(salted.data(), salted.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    return "";  // matches no client: it takes the main fabric
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : std::span(digest, length)) {
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  return text;
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
  int fds[kPassedFds] = {-1, -1};
  int received = 0;
  bool truncated = false;
  const ssize_t n = ReceiveWelcome(fd, welcome, fds, received, truncated);
  if (n <= 0) {
    return fail(n == 0 ? Status::Unavailable("refused by the server (connection closed)")
                       : Status::FromErrno("receive the server's answer", errno),
                {fds[0], fds[1]});
  }
  if (n != sizeof(welcome) || welcome.magic != kSetupMagic || welcome.version != kSetupVersion ||
      welcome.segment_bytes != kSegmentBytes || received != kPassedFds || truncated) {
    return fail(Status::ProtocolError("malformed answer from the server"), {fds[0], fds[1]});
  }
  if (!IsDoorbell(fds[1])) {
    return fail(Status::ProtocolError("the server's doorbell is not a unix stream socket"),
                {fds[0], fds[1]});
  }
  Result<void*> segment = MapSegment(fds[0], /*check_seals=*/true);
  ::close(fds[0]);
  if (!segment.ok()) return fail(segment.status(), {fds[1]});
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  Link link;
  link.socket = fd;
  link.doorbell = fds[1];
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
    if (fd < 0) {
      const int error = errno;
      // Out of descriptors or memory: the connection stays queued and the listener
      // readable, so waiting on it again would spin (21 797 failed accepts in 5 s,
      // issue 26). Stop watching it for a while instead (WaitForEvents resumes).
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        accept_pause_ = std::clamp(accept_pause_ * 2, kMinAcceptPause, kMaxAcceptPause);
        accept_resume_at_ = std::chrono::steady_clock::now() + accept_pause_;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        LogRefusal(std::string("shm listener: cannot accept (") + std::strerror(error) +
                   "); pausing accepts for " + std::to_string(accept_pause_.count()) + " ms");
      }
      return;  // EAGAIN, or a transient error: the next wake-up retries
    }
    accept_pause_ = std::chrono::milliseconds(0);
    // Another user's connection is closed at once, before it can hold anything
    // (a descriptor, a hello slot) of this server.
    if (Result<ucred> peer = PeerCredentials(fd); !peer.ok()) {
      LogRefusal("shm connection refused at accept: " + peer.status().message());
      ::close(fd);
      continue;
    }
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

int ShmFabric::ResumeAcceptingIfDue(int timeout_ms) {
  if (!accept_resume_at_) return timeout_ms;
  const auto now = std::chrono::steady_clock::now();
  if (*accept_resume_at_ <= now) {
    accept_resume_at_.reset();
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kTagListener;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &event);
    return timeout_ms;
  }
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*accept_resume_at_ - now).count();
  const int until = static_cast<int>(std::clamp<long long>(wait, 0, 1000));
  return timeout_ms < 0 ? until : std::min(timeout_ms, until);
}

void ShmFabric::OnHello(int fd) {
  half_open_.erase(fd);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  Status status = AcceptHello(fd);
  if (!status.ok()) LogRefusal("shm connection refused: " + status.ToString());
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
  Result<std::array<int, 2>> doorbell = OpenDoorbellPair();  // [1] goes to the client
  Result<void*> segment =
      doorbell.ok() ? MapSegment(*memfd, /*check_seals=*/false) : Result<void*>(doorbell.status());
  if (!segment.ok()) {
    if (doorbell.ok()) CloseAll({(*doorbell)[0], (*doorbell)[1]});
    CloseAll({fd, *memfd});
    return segment.status();
  }
  link.doorbell = (*doorbell)[0];
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
    const int passed[kPassedFds] = {*memfd, (*doorbell)[1]};
    std::memcpy(CMSG_DATA(c), passed, sizeof(passed));
    if (::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT) !=
        static_cast<ssize_t>(sizeof(welcome))) {
      accepted = Status::FromErrno("send the welcome", errno);
    }
  }
  ::close(*memfd);
  ::close((*doorbell)[1]);  // the client's now (or never: then this side sees EPIPE)
  if (!accepted.ok()) {
    endpoint->Teardown(accepted);
    return accepted.WithContext("connection from " + link.peer);
  }
  return Status::Ok();
}

}  // namespace artune::transport::fabric::shm
