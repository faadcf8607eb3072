// libartune_preload.so: loaded into a command with LD_PRELOAD by
// `artune probe --exec -- CMD`, it wraps the socket I/O calls (sendmsg, recvmsg,
// writev, readv, sendto/send, recvfrom/recv, write, read and the fortified
// __read_chk/__recv_chk/__recvfrom_chk), and, for TCP sockets only, records each
// completed call into the shared ring (shm_ring.h) that artune reads. connect,
// accept, accept4, close, dup2 and dup3 are wrapped to know when a socket starts
// and ends.
//
// Contract with the application: every call goes to the real function unchanged,
// with its return value and errno; nothing here blocks, allocates or takes a lock
// (a full ring drops the record and counts it), so the wrappers are safe in any
// thread, in signal handlers and after fork (children keep writing into the same
// shared ring; exec'd programs reopen it by name from the environment).
//
// Known limits: fds >= kFdTableSize are not traced (counted in untraced_fds); a
// socket fd closed by libc internally (not through close/dup2/dup3) and reused for
// another socket keeps the old addresses until its next connect/accept.
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "preload/shm_ring.h"

#define ARTUNE_EXPORT extern "C" __attribute__((visibility("default")))

namespace artune::probes::preload {
namespace {

// ---- the real functions -----------------------------------------------------

struct RealFunctions {
  ssize_t (*sendmsg)(int, const msghdr*, int);
  ssize_t (*recvmsg)(int, msghdr*, int);
  ssize_t (*writev)(int, const iovec*, int);
  ssize_t (*readv)(int, const iovec*, int);
  ssize_t (*sendto)(int, const void*, size_t, int, const sockaddr*, socklen_t);
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
  ssize_t (*send)(int, const void*, size_t, int);
  ssize_t (*recv)(int, void*, size_t, int);
  ssize_t (*write)(int, const void*, size_t);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*read_chk)(int, void*, size_t, size_t);
  ssize_t (*recv_chk)(int, void*, size_t, size_t, int);
  ssize_t (*recvfrom_chk)(int, void*, size_t, size_t, int, sockaddr*, socklen_t*);
  int (*connect)(int, const sockaddr*, socklen_t);
  int (*accept)(int, sockaddr*, socklen_t*);
  int (*accept4)(int, sockaddr*, socklen_t*, int);
  int (*close)(int);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
};

RealFunctions real;
pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

template <typename Function>
void Resolve(Function& function, const char* name) {
  function = reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

void ResolveAll() {
  Resolve(real.sendmsg, "sendmsg");
  Resolve(real.recvmsg, "recvmsg");
  Resolve(real.writev, "writev");
  Resolve(real.readv, "readv");
  Resolve(real.sendto, "sendto");
  Resolve(real.recvfrom, "recvfrom");
  Resolve(real.send, "send");
  Resolve(real.recv, "recv");
  Resolve(real.write, "write");
  Resolve(real.read, "read");
  Resolve(real.read_chk, "__read_chk");
  Resolve(real.recv_chk, "__recv_chk");
  Resolve(real.recvfrom_chk, "__recvfrom_chk");
  Resolve(real.connect, "connect");
  Resolve(real.accept, "accept");
  Resolve(real.accept4, "accept4");
  Resolve(real.close, "close");
  Resolve(real.dup2, "dup2");
  Resolve(real.dup3, "dup3");
}

// Wrappers can run before this library's constructor (another library's
// constructor doing I/O), so every wrapper resolves on first use.
inline const RealFunctions& Real() {
  pthread_once(&resolve_once, ResolveAll);
  return real;
}

// ---- the ring and per-process state ----------------------------------------

RingHeader* ring = nullptr;  // null: not traced (no ring in the environment)
uint64_t ring_capacity = 0;  // checked at open; the header's copy may be overwritten
uint32_t process_id = 0;
__thread uint32_t thread_id __attribute__((tls_model("initial-exec"))) = 0;

void ResetIdsAfterFork() {
  process_id = static_cast<uint32_t>(getpid());
  thread_id = 0;
}

uint32_t ThreadId() {
  if (thread_id == 0) thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  return thread_id;
}

uint64_t MonotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

__attribute__((constructor)) void OpenRing() {
  process_id = static_cast<uint32_t>(getpid());
  pthread_atfork(nullptr, nullptr, ResetIdsAfterFork);
  // "fd:N": the ring's memfd, inherited from artune (and kept open, so that the
  // programs this one execs inherit it too).
  const char* name = getenv(kRingEnvironmentVariable);
  if (name == nullptr || strncmp(name, "fd:", 3) != 0) return;
  char* end = nullptr;
  const long number = strtol(name + 3, &end, 10);
  const int fd = (end != name + 3 && *end == '\0' && number >= 0 && number < INT_MAX)
                     ? static_cast<int>(number)
                     : -1;
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
    fprintf(stderr, "artune preload: the capture ring %s is not open here; not tracing\n", name);
    return;
  }
  struct stat info;
  void* mapping = MAP_FAILED;
  if (fstat(fd, &info) == 0 && static_cast<size_t>(info.st_size) > kRingHeaderBytes) {
    mapping =
        mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (mapping == MAP_FAILED) {
    fprintf(stderr, "artune preload: cannot map the capture ring %s; not tracing\n", name);
    return;
  }
  auto* header = static_cast<RingHeader*>(mapping);
  const uint64_t capacity = header->capacity;
  if (header->magic != kRingMagic || header->version != kRingVersion ||
      !ValidRingCapacity(capacity, static_cast<uint64_t>(info.st_size))) {
    fprintf(stderr,
            "artune preload: capture ring %s has another layout (library and artune from "
            "different builds); not tracing\n",
            name);
    munmap(mapping, static_cast<size_t>(info.st_size));
    return;
  }
  ring_capacity = capacity;
  ring = header;
}

// ---- which fds are TCP sockets ----------------------------------------------

constexpr int kFdTableSize = 65536;

enum FdState : uint32_t { kUnknown = 0, kTcp = 1, kOther = 2, kFilling = 3 };

struct FdEntry {
  uint32_t state;       // FdState, accessed atomically
  uint32_t from_start;  // connect()/accept() seen, accessed atomically
  uint64_t inode;
  Connection connection;
};

FdEntry fd_table[kFdTableSize];

void CopyAddress(const sockaddr_storage& address, uint8_t* out, uint16_t* port) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    memcpy(out, &v4.sin_addr, 4);
    *port = ntohs(v4.sin_port);
  } else {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    memcpy(out, &v6.sin6_addr, 16);
    *port = ntohs(v6.sin6_port);
  }
}

// Works out whether `fd` (with inode `inode`) is a connected TCP socket and caches
// the answer. Returns kTcp, kOther, or kUnknown when it cannot tell yet (a socket
// not connected yet).
FdState Classify(int fd, const struct stat& info, Connection* connection) {
  FdEntry& entry = fd_table[fd];
  Connection found{};
  FdState state = kOther;
  if (S_ISSOCK(info.st_mode)) {
    int type = 0;
    socklen_t type_length = sizeof(type);
    sockaddr_storage local{}, remote{};
    socklen_t local_length = sizeof(local), remote_length = sizeof(remote);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0) return kUnknown;
    if (type == SOCK_STREAM &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0 &&
        (local.ss_family == AF_INET || local.ss_family == AF_INET6)) {
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_length) != 0) {
        return kUnknown;  // not connected yet: ask again on the next call
      }
      found.family = local.ss_family;
      CopyAddress(local, found.local_address, &found.local_port);
      CopyAddress(remote, found.remote_address, &found.remote_port);
      found.from_start = static_cast<uint8_t>(__atomic_load_n(&entry.from_start, __ATOMIC_RELAXED));
      state = kTcp;
    }
  }
  *connection = found;
  uint32_t expected = kUnknown;
  if (__atomic_compare_exchange_n(&entry.state, &expected, kFilling, false, __ATOMIC_ACQUIRE,
                                  __ATOMIC_RELAXED)) {
    entry.inode = info.st_ino;
    entry.connection = found;
    __atomic_store_n(&entry.state, state, __ATOMIC_RELEASE);
  }
  return state;
}

// True when fd is a traced TCP socket; fills its connection. `verify_inode`: the
// fd may be anything (read/write), so check the cache against fstat first.
bool LookupTcp(int fd, bool verify_inode, Connection* connection) {
  if (ring == nullptr || fd < 0) return false;
  if (fd >= kFdTableSize) {
    __atomic_add_fetch(&ring->untraced_fds, 1, __ATOMIC_RELAXED);
    return false;
  }
  FdEntry& entry = fd_table[fd];
  struct stat info;
  bool have_info = false;
  if (verify_inode) {
    if (fstat(fd, &info) != 0) return false;
    have_info = true;
  }
  uint32_t state = __atomic_load_n(&entry.state, __ATOMIC_ACQUIRE);
  if ((state == kTcp || state == kOther) && have_info && entry.inode != info.st_ino) {
    // The fd number was reused behind our back (closed inside libc): start over.
    __atomic_compare_exchange_n(&entry.state, &state, kUnknown, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    state = kUnknown;
  }
  if (state == kTcp) {
    *connection = entry.connection;
    return true;
  }
  if (state == kOther) return false;
  if (!have_info && fstat(fd, &info) != 0) return false;
  return Classify(fd, info, connection) == kTcp;
}

void ForgetFd(int fd, bool from_start) {
  if (fd < 0 || fd >= kFdTableSize) return;
  FdEntry& entry = fd_table[fd];
  __atomic_store_n(&entry.from_start, from_start ? 1u : 0u, __ATOMIC_RELAXED);
  __atomic_store_n(&entry.state, static_cast<uint32_t>(kUnknown), __ATOMIC_RELEASE);
}

// ---- recording ----------------------------------------------------------------

// Copies the first `transferred` bytes spread over `iov` into data records.
// Returns how many of them could not be copied (capture limit, ring full).
uint64_t RecordData(Call call, const Connection& connection, const iovec* iov, int iovcnt,
                    uint64_t transferred, uint64_t end_ns) {
  uint64_t wanted = transferred;
  if (wanted > ring->max_capture_bytes_per_call) wanted = ring->max_capture_bytes_per_call;
  uint64_t copied = 0;
  int index = 0;
  size_t within = 0;
  while (copied < wanted) {
    const uint32_t chunk = static_cast<uint32_t>(
        wanted - copied < kDataChunkBytes ? wanted - copied : kDataChunkBytes);
    uint8_t* slot = Reserve(ring, ring_capacity, AlignRecord(sizeof(DataRecord) + chunk));
    if (slot == nullptr) break;  // the rest becomes one gap
    auto* record = reinterpret_cast<DataRecord*>(slot);
    record->call = static_cast<uint32_t>(call);
    record->length = chunk;
    record->offset = copied;
    record->end_ns = end_ns;
    record->connection = connection;
    uint32_t filled = 0;
    while (filled < chunk && index < iovcnt) {
      const size_t available = iov[index].iov_len - within;
      const size_t n = available < chunk - filled ? available : chunk - filled;
      memcpy(DataBytes(record) + filled, static_cast<const uint8_t*>(iov[index].iov_base) + within,
             n);
      filled += static_cast<uint32_t>(n);
      within += n;
      if (within == iov[index].iov_len) {
        ++index;
        within = 0;
      }
    }
    Publish(ring, slot, RecordType::kData);
    copied += chunk;
  }
  return transferred - copied;
}

void RecordCall(Call call, int fd, const Connection& connection, const iovec* iov, int iovcnt,
                ssize_t result, int saved_errno, uint64_t start_ns, uint64_t end_ns) {
  uint64_t dropped = 0;
  if (ring->capture_bytes != 0 && result > 0) {
    dropped = RecordData(call, connection, iov, iovcnt, static_cast<uint64_t>(result), end_ns);
  }
  const uint32_t recorded =
      iovcnt < 0
          ? 0u
          : (static_cast<size_t>(iovcnt) > kMaxIovecs ? kMaxIovecs : static_cast<uint32_t>(iovcnt));
  uint8_t* slot =
      Reserve(ring, ring_capacity, AlignRecord(sizeof(CallRecord) + recorded * sizeof(uint32_t)));
  if (slot == nullptr) return;
  auto* record = reinterpret_cast<CallRecord*>(slot);
  record->call = static_cast<uint32_t>(call);
  record->pid = process_id;
  record->tid = ThreadId();
  record->fd = fd;
  record->iovec_count = iovcnt < 0 ? 0u : static_cast<uint32_t>(iovcnt);
  record->iovec_recorded = recorded;
  record->result = result >= 0 ? result : -static_cast<int64_t>(saved_errno);
  record->start_ns = start_ns;
  record->end_ns = end_ns;
  record->data_bytes_dropped = dropped;
  record->connection = connection;
  for (uint32_t i = 0; i < recorded; ++i) {
    CallLengths(record)[i] = static_cast<uint32_t>(iov[i].iov_len);
  }
  Publish(ring, slot, RecordType::kCall);
}

// Runs `perform` (the real call); when fd is a traced TCP socket, records it.
// errno is what the real call left, whatever the recording did.
template <typename Perform>
ssize_t Traced(Call call, int fd, bool any_fd_type, const iovec* iov, int iovcnt, Perform perform) {
  Connection connection;
  const int entry_errno = errno;
  if (!LookupTcp(fd, any_fd_type, &connection)) {
    errno = entry_errno;
    return perform();
  }
  errno = entry_errno;
  const uint64_t start_ns = MonotonicNs();
  const ssize_t result = perform();
  const int saved_errno = errno;
  RecordCall(call, fd, connection, iov, iovcnt, result, saved_errno, start_ns, MonotonicNs());
  errno = saved_errno;
  return result;
}

void RecordClose(int fd) {
  if (ring == nullptr || fd < 0 || fd >= kFdTableSize) return;
  FdEntry& entry = fd_table[fd];
  if (__atomic_load_n(&entry.state, __ATOMIC_ACQUIRE) != kTcp) return;
  uint8_t* slot = Reserve(ring, ring_capacity, AlignRecord(sizeof(CloseRecord)));
  if (slot == nullptr) return;
  auto* record = reinterpret_cast<CloseRecord*>(slot);
  record->pid = process_id;
  record->fd = fd;
  record->timestamp_ns = MonotonicNs();
  record->connection = entry.connection;
  Publish(ring, slot, RecordType::kClose);
}

}  // namespace
}  // namespace artune::probes::preload

using namespace artune::probes::preload;  // NOLINT: the exported wrappers below

ARTUNE_EXPORT ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  const iovec* iov = message != nullptr ? message->msg_iov : nullptr;
  const int iovcnt = message != nullptr ? static_cast<int>(message->msg_iovlen) : 0;
  return Traced(Call::kSendmsg, fd, false, iov, iovcnt,
                [&] { return Real().sendmsg(fd, message, flags); });
}

ARTUNE_EXPORT ssize_t recvmsg(int fd, msghdr* message, int flags) {
  const iovec* iov = message != nullptr ? message->msg_iov : nullptr;
  const int iovcnt = message != nullptr ? static_cast<int>(message->msg_iovlen) : 0;
  return Traced(Call::kRecvmsg, fd, false, iov, iovcnt,
                [&] { return Real().recvmsg(fd, message, flags); });
}

ARTUNE_EXPORT ssize_t writev(int fd, const iovec* iov, int iovcnt) {
  return Traced(Call::kWritev, fd, true, iov, iovcnt,
                [&] { return Real().writev(fd, iov, iovcnt); });
}

ARTUNE_EXPORT ssize_t readv(int fd, const iovec* iov, int iovcnt) {
  return Traced(Call::kReadv, fd, true, iov, iovcnt, [&] { return Real().readv(fd, iov, iovcnt); });
}

ARTUNE_EXPORT ssize_t sendto(int fd, const void* buffer, size_t length, int flags,
                             const sockaddr* address, socklen_t address_length) {
  const iovec one{const_cast<void*>(buffer), length};
  return Traced(Call::kSendto, fd, false, &one, 1,
                [&] { return Real().sendto(fd, buffer, length, flags, address, address_length); });
}

ARTUNE_EXPORT ssize_t recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                               socklen_t* address_length) {
  const iovec one{buffer, length};
  return Traced(Call::kRecvfrom, fd, false, &one, 1, [&] {
    return Real().recvfrom(fd, buffer, length, flags, address, address_length);
  });
}

ARTUNE_EXPORT ssize_t send(int fd, const void* buffer, size_t length, int flags) {
  const iovec one{const_cast<void*>(buffer), length};
  return Traced(Call::kSendto, fd, false, &one, 1,
                [&] { return Real().send(fd, buffer, length, flags); });
}

ARTUNE_EXPORT ssize_t recv(int fd, void* buffer, size_t length, int flags) {
  const iovec one{buffer, length};
  return Traced(Call::kRecvfrom, fd, false, &one, 1,
                [&] { return Real().recv(fd, buffer, length, flags); });
}

ARTUNE_EXPORT ssize_t write(int fd, const void* buffer, size_t length) {
  const iovec one{const_cast<void*>(buffer), length};
  return Traced(Call::kWrite, fd, true, &one, 1, [&] { return Real().write(fd, buffer, length); });
}

ARTUNE_EXPORT ssize_t read(int fd, void* buffer, size_t length) {
  const iovec one{buffer, length};
  return Traced(Call::kRead, fd, true, &one, 1, [&] { return Real().read(fd, buffer, length); });
}

ARTUNE_EXPORT ssize_t __read_chk(int fd, void* buffer, size_t length, size_t buffer_length) {
  const iovec one{buffer, length};
  return Traced(Call::kRead, fd, true, &one, 1,
                [&] { return Real().read_chk(fd, buffer, length, buffer_length); });
}

ARTUNE_EXPORT ssize_t __recv_chk(int fd, void* buffer, size_t length, size_t buffer_length,
                                 int flags) {
  const iovec one{buffer, length};
  return Traced(Call::kRecvfrom, fd, false, &one, 1,
                [&] { return Real().recv_chk(fd, buffer, length, buffer_length, flags); });
}

ARTUNE_EXPORT ssize_t __recvfrom_chk(int fd, void* buffer, size_t length, size_t buffer_length,
                                     int flags, sockaddr* address, socklen_t* address_length) {
  const iovec one{buffer, length};
  return Traced(Call::kRecvfrom, fd, false, &one, 1, [&] {
    return Real().recvfrom_chk(fd, buffer, length, buffer_length, flags, address, address_length);
  });
}

ARTUNE_EXPORT int connect(int fd, const sockaddr* address, socklen_t address_length) {
  const int result = Real().connect(fd, address, address_length);
  const int saved_errno = errno;
  if (result == 0 || saved_errno == EINPROGRESS) ForgetFd(fd, true);
  errno = saved_errno;
  return result;
}

ARTUNE_EXPORT int accept(int fd, sockaddr* address, socklen_t* address_length) {
  const int result = Real().accept(fd, address, address_length);
  const int saved_errno = errno;
  if (result >= 0) ForgetFd(result, true);
  errno = saved_errno;
  return result;
}

ARTUNE_EXPORT int accept4(int fd, sockaddr* address, socklen_t* address_length, int flags) {
  const int result = Real().accept4(fd, address, address_length, flags);
  const int saved_errno = errno;
  if (result >= 0) ForgetFd(result, true);
  errno = saved_errno;
  return result;
}

ARTUNE_EXPORT int close(int fd) {
  const int entry_errno = errno;
  RecordClose(fd);
  ForgetFd(fd, false);
  errno = entry_errno;
  return Real().close(fd);
}

ARTUNE_EXPORT int dup2(int old_fd, int new_fd) {
  const int result = Real().dup2(old_fd, new_fd);
  const int saved_errno = errno;
  if (result >= 0 && old_fd != new_fd) ForgetFd(new_fd, false);
  errno = saved_errno;
  return result;
}

ARTUNE_EXPORT int dup3(int old_fd, int new_fd, int flags) {
  const int result = Real().dup3(old_fd, new_fd, flags);
  const int saved_errno = errno;
  if (result >= 0) ForgetFd(new_fd, false);
  errno = saved_errno;
  return result;
}
