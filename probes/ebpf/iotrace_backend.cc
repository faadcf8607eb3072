// User-space half of the ebpf backend: loads iotrace.bpf.c through its generated
// skeleton, sets the filters before load, and turns ring-buffer records into
// IoCallEvent / stream events.
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "ebpf/ebpf_backend.h"
#include "ebpf/iotrace.h"
#include "iotrace.skel.h"
#include "src/syscall_flows.h"

namespace artune::probes {
namespace {

constexpr const char* kBtfPath = "/sys/kernel/btf/vmlinux";
constexpr const char* kDebugfsTracing = "/sys/kernel/debug/tracing";

// libbpf reports through one process-wide print callback; keep its last lines so a
// failed load can say why (the verifier's complaint, a missing tracepoint).
std::mutex libbpf_log_mutex;
std::deque<std::string> libbpf_log;

int KeepLibbpfMessage(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[512];
  vsnprintf(line, sizeof(line), format, args);
  std::lock_guard lock(libbpf_log_mutex);
  libbpf_log.emplace_back(line);
  while (libbpf_log.size() > 12) libbpf_log.pop_front();
  return 0;
}

std::string TakeLibbpfLog() {
  std::lock_guard lock(libbpf_log_mutex);
  std::string text;
  for (const auto& line : libbpf_log) text += line;
  libbpf_log.clear();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.empty() ? "" : " (libbpf: " + text + ")";
}

bool HasEffectiveCapability(int capability) {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[capability / 32].effective & (1u << (capability % 32))) != 0;
}

Status CheckPrivileges() {
  if (geteuid() == 0) return Status::Ok();
  if (HasEffectiveCapability(CAP_SYS_ADMIN)) return Status::Ok();
  if (HasEffectiveCapability(CAP_BPF) && HasEffectiveCapability(CAP_PERFMON)) return Status::Ok();
  return Status::PermissionDenied(
      "the ebpf backend needs root or CAP_BPF + CAP_PERFMON (this process has neither): run "
      "as root, or trace without privileges with `artune probe --exec -- CMD ARGS`");
}

bool DirectoryHasEntry(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

// libbpf attaches tracepoints through <tracing>/events/...; it looks in debugfs
// first when that directory exists, else in tracefs.
Status EnsureTracefs(const std::string& tracefs_path) {
  if (DirectoryHasEntry(std::string(kDebugfsTracing) + "/events/syscalls")) return Status::Ok();
  if (DirectoryHasEntry(tracefs_path + "/events/syscalls")) return Status::Ok();
  if (DirectoryHasEntry(kDebugfsTracing)) {
    return Status::Unavailable(std::string(kDebugfsTracing) +
                               " exists but has no events/syscalls: the kernel lacks "
                               "CONFIG_FTRACE_SYSCALLS, or tracefs is not mounted there");
  }
  if (mount("tracefs", tracefs_path.c_str(), "tracefs", 0, nullptr) != 0) {
    return Status::Unavailable("tracefs is not mounted and mounting it at " + tracefs_path +
                               " failed (" + std::strerror(errno) +
                               "): run `mount -t tracefs tracefs " + tracefs_path + "` as root");
  }
  if (!DirectoryHasEntry(tracefs_path + "/events/syscalls")) {
    return Status::Unavailable("tracefs at " + tracefs_path +
                               " has no events/syscalls: the kernel lacks CONFIG_FTRACE_SYSCALLS");
  }
  return Status::Ok();
}

uint64_t NowNs(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

FlowKey MakeFlow(const iotrace_connection& connection, bool send) {
  FlowKey local_to_remote{Endpoint::FromSocketAddress(connection.family, connection.local_address,
                                                      connection.local_port),
                          Endpoint::FromSocketAddress(connection.family, connection.remote_address,
                                                      connection.remote_port)};
  return send ? local_to_remote : local_to_remote.Reversed();
}

bool IsSend(uint32_t syscall) {
  return syscall == IOTRACE_SENDMSG || syscall == IOTRACE_WRITEV || syscall == IOTRACE_SENDTO ||
         syscall == IOTRACE_WRITE;
}

class EbpfBackend final : public CaptureBackend {
 public:
  explicit EbpfBackend(EbpfOptions options) : options_(std::move(options)) {}
  ~EbpfBackend() override {
    if (ring_ != nullptr) ring_buffer__free(ring_);
    if (skeleton_ != nullptr) iotrace_bpf__destroy(skeleton_);
  }

  BackendKind kind() const override { return BackendKind::kEbpf; }

  Status Start() override {
    ARTUNE_RETURN_IF_ERROR(CheckPrivileges());
    if (!DirectoryHasEntry(kBtfPath)) {
      return Status::Unsupported(
          std::string("the kernel exposes no BTF at ") + kBtfPath +
          " (built without CONFIG_DEBUG_INFO_BTF), which the CO-RE program needs: use "
          "`artune probe --exec -- CMD ARGS` or the pcap backend instead");
    }
    if (options_.pid && kill(static_cast<pid_t>(*options_.pid), 0) != 0 && errno == ESRCH) {
      return Status::NotFound("no process with pid " + std::to_string(*options_.pid) +
                              ": check the pid (ps -e), or use --comm NAME");
    }
    ARTUNE_RETURN_IF_ERROR(EnsureTracefs(options_.tracefs_path));

    libbpf_set_print(KeepLibbpfMessage);
    skeleton_ = iotrace_bpf__open();
    if (skeleton_ == nullptr) {
      return Status::Unavailable("opening the iotrace BPF object failed" + TakeLibbpfLog());
    }
    skeleton_->rodata->target_tgid = options_.pid.value_or(0);
    std::memset(skeleton_->rodata->target_comm, 0, IOTRACE_TASK_COMM_LEN);
    std::memcpy(skeleton_->rodata->target_comm, options_.comm.data(), options_.comm.size());
    skeleton_->rodata->capture_data = options_.decode;
    skeleton_->rodata->max_data_bytes_per_call = options_.decode_max_bytes_per_call;
    if (int error = bpf_map__set_max_entries(skeleton_->maps.events,
                                             static_cast<uint32_t>(options_.ring_buffer_bytes));
        error != 0) {
      return Status::InvalidArgument("ring buffer size " +
                                     std::to_string(options_.ring_buffer_bytes) +
                                     " rejected: " + std::strerror(-error));
    }
    if (int error = iotrace_bpf__load(skeleton_); error != 0) {
      return Status::Unavailable(std::string("loading the iotrace BPF program failed: ") +
                                 std::strerror(-error) + TakeLibbpfLog());
    }
    if (int error = iotrace_bpf__attach(skeleton_); error != 0) {
      return Status::Unavailable(std::string("attaching to the syscall tracepoints failed: ") +
                                 std::strerror(-error) + TakeLibbpfLog());
    }
    ring_ = ring_buffer__new(bpf_map__fd(skeleton_->maps.events), &EbpfBackend::OnRecord, this,
                             nullptr);
    if (ring_ == nullptr) {
      return Status::Unavailable(std::string("opening the BPF ring buffer failed: ") +
                                 std::strerror(errno) + TakeLibbpfLog());
    }
    realtime_offset_ns_ = NowNs(CLOCK_REALTIME) - NowNs(CLOCK_MONOTONIC);
    return Status::Ok();
  }

  Status Run(EventSink& sink, const StopCondition& stop) override {
    if (ring_ == nullptr)
      return Status::Internal("ebpf backend: Run() before a successful Start()");
    sink_ = &sink;
    const auto started = std::chrono::steady_clock::now();
    auto next_tick = started + stop.tick_interval;
    Status result;
    while (true) {
      // The program wakes us only when the ring is an eighth full; drain anyway.
      int polled = ring_buffer__poll(ring_, 100);
      if (polled >= 0) polled = ring_buffer__consume(ring_);
      if (polled < 0 && polled != -EINTR) {
        result = Status::IoError(std::string("polling the BPF ring buffer failed: ") +
                                 std::strerror(-polled));
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (stop.on_tick && now >= next_tick) {
        stop.on_tick(counters());
        next_tick = now + stop.tick_interval;
      }
      if (stop.stop_requested != nullptr && stop.stop_requested->load()) break;
      if (stop.duration && now - started >= *stop.duration) break;
      if (options_.pid && kill(static_cast<pid_t>(*options_.pid), 0) != 0 && errno == ESRCH) {
        break;  // the traced process is gone; what it did is in the ring already
      }
    }
    ring_buffer__consume(ring_);  // drain what the kernel captured before the stop
    const uint64_t end_ns = NowNs(CLOCK_REALTIME);
    flows_.CloseAll(sink, end_ns);
    sink_ = nullptr;
    return result;
  }

  BackendCounters counters() const override {
    BackendCounters result = counters_;
    if (skeleton_ != nullptr && skeleton_->bss != nullptr) {
      const iotrace_counters& kernel = skeleton_->bss->counters;
      const uint64_t records_lost = __atomic_load_n(&kernel.records_lost, __ATOMIC_RELAXED);
      const uint64_t data_lost = __atomic_load_n(&kernel.data_lost, __ATOMIC_RELAXED);
      const uint64_t inflight_lost = __atomic_load_n(&kernel.inflight_lost, __ATOMIC_RELAXED);
      const uint64_t socket_lost = __atomic_load_n(&kernel.socket_records_lost, __ATOMIC_RELAXED);
      result.events_lost = records_lost + data_lost + inflight_lost + socket_lost;
      result.detail["socket_records_lost"] = socket_lost;
      result.detail["call_records_lost"] = records_lost;
      result.detail["data_records_lost"] = data_lost;
      result.detail["calls_untraced_inflight_full"] = inflight_lost;
      result.detail["iovec_arrays_unreadable"] =
          __atomic_load_n(&kernel.iovecs_unread, __ATOMIC_RELAXED);
      result.detail["non_tcp_socket_calls"] =
          __atomic_load_n(&kernel.non_tcp_calls, __ATOMIC_RELAXED);
    }
    return result;
  }

 private:
  static int OnRecord(void* context, void* data, size_t size) {
    static_cast<EbpfBackend*>(context)->HandleRecord(static_cast<const uint8_t*>(data), size);
    return 0;
  }

  void HandleRecord(const uint8_t* data, size_t size) {
    uint32_t kind = 0;
    if (size < sizeof(kind)) return;
    std::memcpy(&kind, data, sizeof(kind));
    if (kind == IOTRACE_RECORD_CALL && size >= sizeof(iotrace_call_record)) {
      HandleCall(reinterpret_cast<const iotrace_call_record*>(data), size);
    } else if (kind == IOTRACE_RECORD_DATA && size >= sizeof(iotrace_data_record)) {
      HandleData(reinterpret_cast<const iotrace_data_record*>(data), size);
    } else if (kind == IOTRACE_RECORD_SOCKET && size >= sizeof(iotrace_socket_record)) {
      HandleSocket(*reinterpret_cast<const iotrace_socket_record*>(data));
    } else {
      ++counters_.detail["malformed_records"];
    }
  }

  // False for a flow this capture saw closed (or disconnected): its late bytes
  // are dropped.
  bool OpenFlowOnce(const FlowKey& flow, uint64_t monotonic_ns) {
    return flows_.OpenOnce(*sink_, flow, FlowOrigin::kMidStream,
                           monotonic_ns + realtime_offset_ns_);
  }

  // connect/accept open both directions from their first byte; close ends the
  // directions whose stream this socket owns (SyscallFlows::Close), and a flow
  // stays ended so that late records are not taken for a new connection.
  void HandleSocket(const iotrace_socket_record& record) {
    const FlowKey outgoing = MakeFlow(record.connection, /*send=*/true);
    const uint64_t timestamp = record.timestamp_ns + realtime_offset_ns_;
    switch (record.event) {
      case IOTRACE_SOCKET_CONNECT:
      case IOTRACE_SOCKET_ACCEPT:
        ++counters_.detail[record.event == IOTRACE_SOCKET_CONNECT ? "connects" : "accepts"];
        flows_.OpenFromHandshake(*sink_, outgoing, timestamp);
        flows_.OpenFromHandshake(*sink_, outgoing.Reversed(), timestamp);
        return;
      case IOTRACE_SOCKET_CLOSE:
        ++counters_.detail["closes"];
        flows_.Close(*sink_, outgoing, /*closing_sends=*/true, FlowEnd::kFin, timestamp);
        flows_.Close(*sink_, outgoing.Reversed(), /*closing_sends=*/false, FlowEnd::kFin,
                     timestamp);
        return;
      default:
        ++counters_.detail["malformed_records"];
    }
  }

  void HandleData(const iotrace_data_record* record, size_t size) {
    const size_t length = std::min<size_t>(record->length, size - sizeof(*record));
    const bool send = IsSend(record->syscall);
    const FlowKey flow = MakeFlow(record->connection, send);
    if (!OpenFlowOnce(flow, record->end_ns)) {
      counters_.detail["bytes_on_ended_flows"] += length;
      return;
    }
    if (!flows_.OwnsStream(flow, send, length, counters_)) return;
    const auto* bytes = reinterpret_cast<const uint8_t*>(record) + sizeof(*record);
    StreamSegment segment{flow, record->end_ns + realtime_offset_ns_,
                          std::span<const uint8_t>(bytes, length)};
    sink_->OnStreamBytes(segment);
    counters_.detail["decoded_bytes"] += length;
  }

  void HandleCall(const iotrace_call_record* record, size_t size) {
    const bool send = IsSend(record->syscall);
    IoCallEvent event;
    event.syscall = static_cast<IoSyscall>(record->syscall);
    event.pid = record->pid;
    event.tid = record->tid;
    event.fd = record->fd;
    event.flow = MakeFlow(record->connection, send);
    event.result = record->result;
    event.start_ns = record->start_ns;
    event.end_ns = record->end_ns;
    const size_t available = (size - sizeof(*record)) / sizeof(iotrace_iovec);
    const size_t recorded = std::min<size_t>(record->iovec_recorded, available);
    event.iovec_lengths.reserve(recorded);
    const auto* iovecs = reinterpret_cast<const uint8_t*>(record) + sizeof(*record);
    for (size_t i = 0; i < recorded; ++i) {
      iotrace_iovec iovec;
      std::memcpy(&iovec, iovecs + i * sizeof(iovec), sizeof(iovec));
      event.iovec_lengths.push_back(static_cast<uint32_t>(iovec.length));
    }
    if (recorded < record->iovec_count) ++counters_.detail["calls_with_iovecs_missing"];

    const bool open = OpenFlowOnce(event.flow, record->start_ns);
    flows_.DeliverCall(*sink_, event, open, send, record->data_bytes_dropped,
                       record->end_ns + realtime_offset_ns_, counters_);
  }

  EbpfOptions options_;
  iotrace_bpf* skeleton_ = nullptr;
  ring_buffer* ring_ = nullptr;
  EventSink* sink_ = nullptr;  // set during Run only
  uint64_t realtime_offset_ns_ = 0;
  SyscallFlows flows_;
  BackendCounters counters_;
};

}  // namespace

Result<std::unique_ptr<CaptureBackend>> CreateEbpfBackend(const EbpfOptions& options) {
  if (options.pid.has_value() == !options.comm.empty()) {
    return Status::InvalidArgument(
        "the ebpf backend traces one process: give exactly one of --pid PID and --comm NAME");
  }
  if (options.comm.size() >= IOTRACE_TASK_COMM_LEN) {
    return Status::InvalidArgument("--comm '" + options.comm + "' is " +
                                   std::to_string(options.comm.size()) +
                                   " characters; process names are at most 15 (see "
                                   "/proc/PID/comm)");
  }
  if (options.pid && *options.pid == 0) {
    return Status::InvalidArgument(
        "--pid 0 is not a process: give the pid of the process to trace");
  }
  const uint64_t ring = options.ring_buffer_bytes;
  if (ring < 4096 || (ring & (ring - 1)) != 0 || ring > (1ull << 31)) {
    return Status::InvalidArgument("BPF ring buffer size " + std::to_string(ring) +
                                   " must be a power of two between 4 KiB and 2 GiB");
  }
  return std::unique_ptr<CaptureBackend>(std::make_unique<EbpfBackend>(options));
}

}  // namespace artune::probes
