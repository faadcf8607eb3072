// The artune side of the preload backend: owns the shared ring, starts the command
// with the library injected, and turns ring records into events.
#include "preload/preload_backend.h"

#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "artune/base/helper_library.h"
#include "preload/shm_ring.h"
#include "src/syscall_flows.h"

namespace artune::probes {
namespace {

using preload::CallRecord;
using preload::CloseRecord;
using preload::Connection;
using preload::DataRecord;
using preload::RecordHeader;
using preload::RecordType;
using preload::RingHeader;

constexpr const char* kLibraryName = "libartune_preload.so";

uint64_t NowNs(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

FlowKey LocalToRemote(const Connection& connection) {
  return {Endpoint::FromSocketAddress(connection.family, connection.local_address,
                                      connection.local_port),
          Endpoint::FromSocketAddress(connection.family, connection.remote_address,
                                      connection.remote_port)};
}

bool IsSend(uint32_t call) {
  const auto syscall = static_cast<IoSyscall>(call);
  return syscall == IoSyscall::kSendmsg || syscall == IoSyscall::kWritev ||
         syscall == IoSyscall::kSendto || syscall == IoSyscall::kWrite;
}

FlowKey MakeFlow(const Connection& connection, uint32_t call) {
  const FlowKey flow = LocalToRemote(connection);
  return IsSend(call) ? flow : flow.Reversed();
}

// The shared memory object: an anonymous memfd, so no name exists anywhere and a
// killed probe leaves nothing behind; the traced command inherits the descriptor
// (named in its environment), and so do the programs it execs.
// Sealed at its size before the command starts.
class SharedRing {
 public:
  ~SharedRing() {
    if (header_ != nullptr) munmap(header_, mapping_bytes_);
    if (fd_ >= 0) close(fd_);
  }

  Status Create(const PreloadOptions& options) {
    fd_ = memfd_create("artune-preload-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd_ < 0) {
      return Status::FromErrno("creating the shared capture ring (memfd_create)", errno);
    }
    mapping_bytes_ = preload::kRingHeaderBytes + options.ring_bytes;
    capacity_ = options.ring_bytes;
    void* mapping = MAP_FAILED;
    if (ftruncate(fd_, static_cast<off_t>(mapping_bytes_)) == 0) {
      mapping = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    }
    const int error = errno;
    if (mapping == MAP_FAILED) {
      return Status::FromErrno("sizing the shared capture ring to " +
                                   std::to_string(mapping_bytes_) + " bytes (lower the ring size)",
                               error);
    }
    // The traced command holds the descriptor: sealed, its size can never change
    // (a truncation would turn this side's next read into a SIGBUS), nor can a
    // later seal (a write seal) take the ring from the probe.
    if (fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      const int seal_error = errno;
      munmap(mapping, mapping_bytes_);
      return Status::FromErrno("sealing the shared capture ring (F_ADD_SEALS)", seal_error);
    }
    header_ = static_cast<RingHeader*>(mapping);
    header_->version = preload::kRingVersion;
    header_->capacity = options.ring_bytes;
    header_->capture_bytes = options.capture_bytes ? 1 : 0;
    header_->max_capture_bytes_per_call = options.capture_max_bytes_per_call;
    __atomic_store_n(&header_->magic, preload::kRingMagic, __ATOMIC_RELEASE);
    return Status::Ok();
  }

  // The descriptor the traced command inherits (close-on-exec in this process).
  int fd() const { return fd_; }
  RingHeader* header() const { return header_; }
  uint64_t capacity() const { return capacity_; }

 private:
  int fd_ = -1;
  RingHeader* header_ = nullptr;
  size_t mapping_bytes_ = 0;
  uint64_t capacity_ = 0;  // this side's copy: the ring's own may be overwritten
};

// What the keeper waits for (blocked from before its fork).
constexpr int kKeeperSignals[] = {SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM};

// One record through the spawn's report pipe (a single write: atomic).
struct SpawnReport {
  enum Kind : int { kPid = 1, kExecErrno = 2 };
  int kind;
  int value;
};

// How the traced command was started: the pid to wait for (the keeper, or the
// command itself when it may outlive the probe) and the command's process group.
struct Spawned {
  pid_t waited = -1;
  pid_t group = -1;
};

// The keeper: a forked copy of the probe (async-signal-safe calls only) that
// starts the command in a process group of its own, then waits. When the command
// ends it exits with the same status (re-raising a fatal signal), so the probe
// reads the command's status from the keeper. When the probe dies, even by
// SIGKILL, the kernel sends the keeper SIGHUP (PR_SET_PDEATHSIG), and the keeper
// ends the whole group: SIGTERM, then SIGKILL after `grace_ms`. So neither the
// command nor anything it started in its group outlives a killed probe. SIGINT,
// SIGQUIT and SIGTERM (a Ctrl-C reaches the keeper, which is in the probe's
// group) are passed on to the command's group rather than ending the keeper.
[[noreturn]] void RunKeeper(pid_t command, uint32_t grace_ms) {
  sigset_t waited;
  sigemptyset(&waited);
  for (int signal_number : kKeeperSignals) sigaddset(&waited, signal_number);
  for (;;) {
    siginfo_t info{};
    if (sigwaitinfo(&waited, &info) < 0) continue;
    if (info.si_signo == SIGINT || info.si_signo == SIGQUIT || info.si_signo == SIGTERM) {
      kill(-command, info.si_signo);
      continue;
    }
    if (info.si_signo == SIGHUP) {  // the probe is gone
      kill(-command, SIGTERM);
      const timespec grace{static_cast<time_t>(grace_ms / 1000),
                           static_cast<long>(grace_ms % 1000) * 1000000L};
      sigset_t child_only;
      sigemptyset(&child_only);
      sigaddset(&child_only, SIGCHLD);
      if (sigtimedwait(&child_only, &info, &grace) < 0 ||
          waitpid(command, nullptr, WNOHANG) != command) {
        kill(-command, SIGKILL);
      }
      _exit(128 + SIGHUP);
    }
    int status = 0;
    if (waitpid(command, &status, WNOHANG) != command) continue;
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    const int signal_number = WTERMSIG(status);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigaction(signal_number, &default_action, nullptr);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    prctl(PR_SET_DUMPABLE, 0);  // no core file for a status copied from the command
    raise(signal_number);
    _exit(128 + signal_number);
  }
}

// Reads what the keeper and the command report through `report_fd` (closed here)
// until end of file: the command's pid, and errno if its exec failed. On a failure
// reaps `waited` (the keeper or the command) and says why, naming `command`.
Result<Spawned> ReadSpawnReports(int report_fd, pid_t waited, const char* command) {
  // Two writers (the keeper and the command) may report in either order; each
  // record is one atomic pipe write. End of file once both have exec'd or exited.
  Spawned spawned{waited, -1};
  std::optional<int> exec_error;
  SpawnReport report_record{};
  for (;;) {
    ssize_t got = 0;
    do {
      got = read(report_fd, &report_record, sizeof(report_record));
    } while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(sizeof(report_record))) break;
    if (report_record.kind == SpawnReport::kPid) spawned.group = report_record.value;
    if (report_record.kind == SpawnReport::kExecErrno) exec_error = report_record.value;
  }
  close(report_fd);
  const bool have_pid = spawned.group > 0;
  if (!have_pid || exec_error) {
    waitpid(waited, nullptr, 0);
    if (!have_pid) return Status::Unavailable("the traced command's keeper process failed");
    const int error = exec_error.value_or(0);
    return Status(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
                  std::string("cannot run '") + command + "': " + std::strerror(error) +
                      " (check the command and PATH)");
  }
  return spawned;
}

// Starts the traced command: with `tied`, under a keeper (above); else as a
// plain child in its own process group that nothing ties to the probe. The
// command keeps the ring descriptor across exec. Its pid and any exec failure
// come back through a close-on-exec pipe: the pid first, then errno if exec
// failed, then end of file.
Result<Spawned> SpawnCommand(std::vector<char*>& argv, std::vector<char*>& envp, int ring_fd,
                             bool stdout_to_stderr, bool tied, uint32_t grace_ms) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    return Status::FromErrno("pipe2 for the traced command", errno);
  // Blocked across the forks so that the keeper cannot miss one; the command
  // gets the probe's mask back before exec.
  sigset_t keeper_signals, saved;
  sigemptyset(&keeper_signals);
  for (int signal_number : kKeeperSignals) sigaddset(&keeper_signals, signal_number);
  pthread_sigmask(SIG_BLOCK, &keeper_signals, &saved);
  const pid_t parent = getpid();
  auto start_command = [&]() -> pid_t {
    const pid_t command = fork();
    if (command != 0) return command;
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &saved, nullptr);
    fcntl(ring_fd, F_SETFD, 0);  // the command and what it execs keep the ring
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    execvpe(argv[0], argv.data(), envp.data());
    const int error = errno;
    const SpawnReport failed{SpawnReport::kExecErrno, error};
    (void)!write(report[1], &failed, sizeof(failed));
    _exit(127);
  };
  pid_t waited = -1;
  if (tied) {
    waited = fork();
    if (waited == 0) {
      close(report[0]);
      prctl(PR_SET_PDEATHSIG, SIGHUP);
      if (getppid() != parent) _exit(127);  // the probe died before the prctl
      const pid_t command = start_command();
      if (command < 0) _exit(127);
      setpgid(command, command);  // either side may win the race; both ask the same
      const SpawnReport started{SpawnReport::kPid, command};
      (void)!write(report[1], &started, sizeof(started));
      close(report[1]);
      RunKeeper(command, grace_ms);
    }
  } else {
    waited = start_command();
    if (waited > 0) {
      setpgid(waited, waited);
      const SpawnReport started{SpawnReport::kPid, waited};
      (void)!write(report[1], &started, sizeof(started));
    }
  }
  const int fork_error = errno;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  close(report[1]);
  if (waited < 0) {
    close(report[0]);
    return Status::FromErrno("fork for the traced command", fork_error);
  }
  return ReadSpawnReports(report[0], waited, argv[0]);
}

class PreloadBackend final : public CaptureBackend {
 public:
  explicit PreloadBackend(PreloadOptions options) : options_(std::move(options)) {}

  ~PreloadBackend() override {
    // Start() without Run(): do not leave it behind (unless it may outlive us).
    if (child_ > 0 && !exit_code_ && !options_.command_outlives_probe) {
      kill(-group_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
  }

  BackendKind kind() const override { return BackendKind::kPreload; }
  std::optional<int> command_exit_code() const override { return exit_code_; }

  Status Start() override {
    ARTUNE_ASSIGN_OR_RETURN(const std::string library, FindPreloadLibrary(options_.library_path));
    ARTUNE_RETURN_IF_ERROR(ring_.Create(options_));

    std::vector<std::string> environment = EnvironmentWithPreload(
        library, preload::kRingEnvironmentVariable, "fd:" + std::to_string(ring_.fd()));

    std::vector<char*> argv;
    for (auto& argument : options_.command) argv.push_back(argument.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& variable : environment) envp.push_back(variable.data());
    envp.push_back(nullptr);

    ARTUNE_ASSIGN_OR_RETURN(
        const Spawned spawned,
        SpawnCommand(argv, envp, ring_.fd(), options_.command_stdout_to_stderr,
                     !options_.command_outlives_probe, options_.terminate_grace_ms));
    child_ = spawned.waited;
    group_ = spawned.group;
    realtime_offset_ns_ = NowNs(CLOCK_REALTIME) - NowNs(CLOCK_MONOTONIC);
    return Status::Ok();
  }

  Status Run(EventSink& sink, const StopCondition& stop) override {
    if (child_ <= 0) return Status::Internal("preload backend: Run() before a successful Start()");
    sink_ = &sink;
    const auto started = std::chrono::steady_clock::now();
    auto next_tick = started + stop.tick_interval;
    std::optional<std::chrono::steady_clock::time_point> terminate_sent;
    bool killed = false;
    while (!exit_code_ && !detached_) {
      const size_t consumed = ConsumeAvailable();
      ReapChild();
      const auto now = std::chrono::steady_clock::now();
      if (stop.on_tick && now >= next_tick) {
        stop.on_tick(counters());
        next_tick = now + stop.tick_interval;
      }
      const bool stop_now = (stop.stop_requested != nullptr && stop.stop_requested->load()) ||
                            (stop.duration && now - started >= *stop.duration);
      if (stop_now && options_.command_outlives_probe && !exit_code_) {
        detached_ = true;  // the command goes on; its later events are not ours
        break;
      }
      // The command's whole process group: what it started ends with it.
      if (stop_now && !terminate_sent && !exit_code_) {
        kill(-group_, SIGTERM);
        terminate_sent = now;
      }
      if (terminate_sent && !killed && !exit_code_ &&
          now - *terminate_sent >= std::chrono::milliseconds(options_.terminate_grace_ms)) {
        kill(-group_, SIGKILL);
        killed = true;
      }
      // Polling: producers never signal artune (no extra syscall in the traced
      // program); a 64 MiB ring absorbs far more than a millisecond of traffic.
      if (consumed == 0 && !exit_code_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // The command has exited: what its processes published is all there is.
    ConsumeAvailable();
    const uint64_t head = __atomic_load_n(&ring_.header()->head, __ATOMIC_ACQUIRE);
    abandoned_bytes_ = head - tail_ <= ring_.capacity() ? head - tail_ : 0;
    const uint64_t end_ns = NowNs(CLOCK_REALTIME);
    flows_.CloseAll(sink, end_ns);
    sink_ = nullptr;
    if (ring_corrupted_) {
      return Status::Corruption(
          "the shared capture ring was overwritten by the traced command (an impossible "
          "record size or position); the capture ends there with the events read before it");
    }
    return Status::Ok();
  }

  BackendCounters counters() const override {
    BackendCounters result = counters_;
    if (ring_.header() != nullptr) {
      const RingHeader* header = ring_.header();
      const uint64_t dropped = __atomic_load_n(&header->records_dropped, __ATOMIC_RELAXED);
      result.events_lost = dropped + (abandoned_bytes_ > 0 ? 1 : 0);
      result.detail["ring_records_dropped"] = dropped;
      result.detail["ring_bytes_dropped"] =
          __atomic_load_n(&header->bytes_dropped, __ATOMIC_RELAXED);
      result.detail["untraced_fds"] = __atomic_load_n(&header->untraced_fds, __ATOMIC_RELAXED);
      if (abandoned_bytes_ > 0) result.detail["ring_bytes_abandoned"] = abandoned_bytes_;
    }
    if (exit_code_) result.detail["command_exit_code"] = static_cast<uint64_t>(*exit_code_);
    return result;
  }

 private:
  void ReapChild() {
    int status = 0;
    const pid_t reaped = waitpid(child_, &status, WNOHANG);
    if (reaped != child_) return;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Reads every published record at the tail; returns how many it read.
  // The traced command can write anything in the ring: the capacity and the tail
  // are this side's own copies, and the head it publishes is checked against them,
  // so no value read from the ring ever places a read or a write outside it.
  size_t ConsumeAvailable() {
    RingHeader* header = ring_.header();
    uint8_t* data = preload::RingData(header);
    const uint64_t capacity = ring_.capacity();
    size_t consumed = 0;
    while (!ring_corrupted_) {
      const uint64_t tail = tail_;
      const uint64_t head = __atomic_load_n(&header->head, __ATOMIC_ACQUIRE);
      if (tail == head) break;
      if (head - tail > capacity) {  // more than the ring holds, or behind the tail
        ring_corrupted_ = true;
        break;
      }
      auto* record = reinterpret_cast<RecordHeader*>(data + (tail & (capacity - 1)));
      const auto type = static_cast<RecordType>(__atomic_load_n(&record->type, __ATOMIC_ACQUIRE));
      if (type == RecordType::kUnpublished) break;  // still being written
      const uint32_t size = record->size;
      if (size < sizeof(RecordHeader) || size % 8 != 0 ||
          (tail & (capacity - 1)) + size > capacity || size > head - tail) {
        ring_corrupted_ = true;
        break;
      }
      Dispatch(type, reinterpret_cast<const uint8_t*>(record), size);
      std::memset(record, 0, size);
      tail_ = tail + size;
      __atomic_store_n(&header->tail, tail_, __ATOMIC_RELEASE);
      ++consumed;
    }
    return consumed;
  }

  void Dispatch(RecordType type, const uint8_t* bytes, uint32_t size) {
    switch (type) {
      case RecordType::kCall:
        if (size >= sizeof(CallRecord))
          HandleCall(reinterpret_cast<const CallRecord*>(bytes), size);
        return;
      case RecordType::kData:
        if (size >= sizeof(DataRecord))
          HandleData(reinterpret_cast<const DataRecord*>(bytes), size);
        return;
      case RecordType::kClose:
        if (size >= sizeof(CloseRecord)) HandleClose(*reinterpret_cast<const CloseRecord*>(bytes));
        return;
      case RecordType::kPadding:
      case RecordType::kUnpublished:
        return;
    }
    ++counters_.detail["unknown_records"];
  }

  // False for a flow this capture saw closed (or disconnected): its late bytes
  // are dropped.
  bool OpenFlowOnce(const FlowKey& flow, const Connection& connection, uint64_t monotonic_ns) {
    return flows_.OpenOnce(*sink_, flow,
                           connection.from_start ? FlowOrigin::kHandshake : FlowOrigin::kMidStream,
                           monotonic_ns + realtime_offset_ns_);
  }

  void HandleData(const DataRecord* record, uint32_t size) {
    const size_t length = std::min<size_t>(record->length, size - sizeof(*record));
    const FlowKey flow = MakeFlow(record->connection, record->call);
    if (!OpenFlowOnce(flow, record->connection, record->end_ns)) {
      counters_.detail["bytes_on_ended_flows"] += length;
      return;
    }
    if (!flows_.OwnsStream(flow, IsSend(record->call), length, counters_)) return;
    sink_->OnStreamBytes(
        StreamSegment{flow, record->end_ns + realtime_offset_ns_,
                      std::span<const uint8_t>(preload::DataBytes(record), length)});
    counters_.detail["decoded_bytes"] += length;
  }

  void HandleCall(const CallRecord* record, uint32_t size) {
    IoCallEvent event;
    event.syscall = static_cast<IoSyscall>(record->call);
    event.pid = record->pid;
    event.tid = record->tid;
    event.fd = record->fd;
    event.flow = MakeFlow(record->connection, record->call);
    event.result = record->result;
    event.start_ns = record->start_ns;
    event.end_ns = record->end_ns;
    const size_t available = (size - sizeof(*record)) / sizeof(uint32_t);
    const size_t recorded = std::min<size_t>(record->iovec_recorded, available);
    const uint32_t* lengths = preload::CallLengths(record);
    event.iovec_lengths.assign(lengths, lengths + recorded);
    if (recorded < record->iovec_count) ++counters_.detail["calls_with_iovecs_missing"];

    const bool open = OpenFlowOnce(event.flow, record->connection, record->start_ns);
    flows_.DeliverCall(*sink_, event, open, IsSend(record->call), record->data_bytes_dropped,
                       record->end_ns + realtime_offset_ns_, counters_);
  }

  void HandleClose(const CloseRecord& record) {
    const FlowKey outgoing = LocalToRemote(record.connection);
    const uint64_t timestamp = record.timestamp_ns + realtime_offset_ns_;
    flows_.Close(*sink_, outgoing, /*closing_sends=*/true, FlowEnd::kFin, timestamp);
    flows_.Close(*sink_, outgoing.Reversed(), /*closing_sends=*/false, FlowEnd::kFin, timestamp);
  }

  PreloadOptions options_;
  SharedRing ring_;
  pid_t child_ = -1;       // waited for: the keeper, or the command itself when it may outlive us
  pid_t group_ = -1;       // the command's process group
  bool detached_ = false;  // stopped while the command goes on (command_outlives_probe)
  std::optional<int> exit_code_;
  EventSink* sink_ = nullptr;  // set during Run only
  uint64_t realtime_offset_ns_ = 0;
  uint64_t abandoned_bytes_ = 0;
  uint64_t tail_ = 0;  // the consumer's own position (the ring's copy is for producers)
  bool ring_corrupted_ = false;
  SyscallFlows flows_;
  BackendCounters counters_;
};

}  // namespace

Result<std::string> FindPreloadLibrary(const std::string& explicit_path) {
#ifdef ARTUNE_PRELOAD_BUILD_PATH
  const char* build_path = ARTUNE_PRELOAD_BUILD_PATH;
#else
  const char* build_path = "";
#endif
  return FindHelperLibrary({kLibraryName, "ARTUNE_PRELOAD_LIBRARY", "artune_preload", build_path},
                           explicit_path);
}

Result<std::unique_ptr<CaptureBackend>> CreatePreloadBackend(const PreloadOptions& options) {
  if (options.command.empty() || options.command[0].empty()) {
    return Status::InvalidArgument("--exec needs a command: artune probe --exec -- CMD ARGS");
  }
  const uint64_t ring = options.ring_bytes;
  if (ring < (64u << 10) || (ring & (ring - 1)) != 0 || ring > (1ull << 32)) {
    return Status::InvalidArgument("preload ring size " + std::to_string(ring) +
                                   " must be a power of two between 64 KiB and 4 GiB");
  }
  return std::unique_ptr<CaptureBackend>(std::make_unique<PreloadBackend>(options));
}

}  // namespace artune::probes
