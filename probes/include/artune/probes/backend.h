// One small interface for every capture backend, and the factory that makes them.
//
// Backends live one per folder (probes/pcap/, later probes/ebpf/ and
// probes/preload/), each behind this interface; nothing outside the folder knows
// their types. Lifecycle: CreateCaptureBackend() -> Start() (acquires the
// interface, program or child process; all "cannot start" errors come from here) ->
// Run() once (blocks, emitting events) -> counters() -> destroy.
//
// Threading: Start() and Run() are called on one thread; the sink is called on that
// thread. The only cross-thread input is StopCondition::stop_requested, which a
// signal handler or another thread may set at any time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "artune/probes/ebpf_options.h"
#include "artune/probes/event.h"
#include "artune/probes/preload_options.h"
#include "artune/status.h"

namespace artune::probes {

enum class BackendKind : uint8_t {
  kPcap,     // libpcap: live interface or saved pcap/pcapng file (probes/pcap/)
  kEbpf,     // syscall tracepoints of one process, libbpf CO-RE (probes/ebpf/)
  kPreload,  // runs a command with an LD_PRELOAD interposer (probes/preload/)
};
const char* BackendKindName(BackendKind kind);

struct PcapOptions {
  std::string interface;         // live capture on this interface ("lo", "eth0", "any")
  std::string read_file;         // or: replay this pcap/pcapng file (exclusive with interface)
  std::optional<uint16_t> port;  // capture filter "tcp port N"
  std::string filter;            // or: a full pcap filter expression (exclusive with port)
  int snapshot_length = 262144;  // bytes kept per packet; larger than loopback's 64 KiB MTU
  int kernel_buffer_bytes = 64 << 20;
};

struct BackendOptions {
  BackendKind kind = BackendKind::kPcap;
  PcapOptions pcap;
  EbpfOptions ebpf;
  PreloadOptions preload;
};

// Counters every backend keeps. `events_lost` is the number the user must see:
// packets dropped by the kernel or interface, ring-buffer overruns.
struct BackendCounters {
  uint64_t events_seen = 0;  // packets, syscall records
  uint64_t events_lost = 0;
  uint64_t bytes_seen = 0;  // payload bytes delivered to the sink
  // Backend-specific detail, e.g. "retransmitted_bytes", "out_of_order_segments".
  std::map<std::string, uint64_t> detail;
};

struct StopCondition {
  // Stop after this long (wall clock from the start of Run); unset: no limit.
  std::optional<std::chrono::milliseconds> duration;
  // Set from any thread or a signal handler to stop; may be null.
  const std::atomic<bool>* stop_requested = nullptr;
  // Called on the run thread about every `tick_interval` (progress lines); may be empty.
  std::function<void(const BackendCounters&)> on_tick;
  std::chrono::milliseconds tick_interval{500};
};

class CaptureBackend {
 public:
  virtual ~CaptureBackend() = default;
  virtual BackendKind kind() const = 0;
  // Acquires the capture resources. Errors: kPermissionDenied (says which rights are
  // missing and the unprivileged alternative), kUnavailable (no such interface,
  // interface down, other start failures), kNotFound (no such capture file),
  // kInvalidArgument (bad filter, unreadable file format).
  virtual Status Start() = 0;
  // Emits events to `sink` until the stop condition holds or the input ends (a saved
  // file). A live backend stops within ~100 ms of stop_requested, after draining
  // what the kernel already captured. Flows still open at the end get
  // OnFlowClose(kCaptureStop). Returns an error only when the capture itself fails.
  virtual Status Run(EventSink& sink, const StopCondition& stop) = 0;
  // A snapshot; valid after Run (and inside on_tick).
  virtual BackendCounters counters() const = 0;
  // The exit status of the command the backend ran (preload: `--exec -- CMD`; 128 +
  // signal number when a signal ended it), once Run() has returned; else nullopt.
  virtual std::optional<int> command_exit_code() const { return std::nullopt; }
};

// Makes the backend `options.kind` selects; checks option consistency
// (kInvalidArgument) but acquires nothing until Start().
Result<std::unique_ptr<CaptureBackend>> CreateCaptureBackend(const BackendOptions& options);

}  // namespace artune::probes
