// Options of the ebpf capture backend (probes/ebpf/): syscall tracepoints on the
// socket I/O of one process, filtered in the kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace artune::probes {

struct EbpfOptions {
  // Trace every thread of this process ...
  std::optional<uint32_t> pid;
  // ... or of every process with this name (the process's, not a thread's, comm;
  // at most 15 characters). Exactly one of pid and comm is set.
  std::string comm;
  // Also copy the bytes each call transferred to user space, so the HTTP/2 and
  // gRPC decoders run on them (OnStreamBytes). Costs a copy of all traffic.
  bool decode = false;
  // With decode: bytes copied per call at most; the rest is reported as a gap.
  uint64_t decode_max_bytes_per_call = 16u << 20;
  // Size of the BPF ring buffer (a power of two, at least one page).
  uint64_t ring_buffer_bytes = 64u << 20;
  // Where tracefs is (mounted there when it is missing).
  std::string tracefs_path = "/sys/kernel/tracing";
};

}  // namespace artune::probes
