// The ebpf capture backend: a libbpf CO-RE program (iotrace.bpf.c) on the syscall
// tracepoints of sendmsg, recvmsg, writev, readv, sendto, recvfrom, write and read,
// reporting every call on a TCP socket of the chosen process as an IoCallEvent
// with its full iovec length list, and, with EbpfOptions::decode, the transferred
// bytes as stream segments.
//
// Requirements, checked by Start() in this order, each with its own error:
//   root, or CAP_BPF + CAP_PERFMON (kPermissionDenied; the message names
//   `artune probe --exec -- CMD` as the unprivileged alternative);
//   kernel BTF at /sys/kernel/btf/vmlinux (kUnsupported);
//   the pid exists (kNotFound);
//   tracefs mounted, or mountable at EbpfOptions::tracefs_path (kUnavailable);
//   the program loads and attaches (kUnavailable, with libbpf's last messages).
//
// Flows: the backend sees a connection from its first traced call, so every flow
// opens as FlowOrigin::kMidStream and closes with kCaptureStop at the end of Run.
// Timestamps: IoCallEvent times are CLOCK_MONOTONIC; stream and flow timestamps
// are CLOCK_REALTIME. With pid, Run also ends when that process exits.
#pragma once

#include <memory>

#include "artune/probes/backend.h"
#include "artune/probes/ebpf_options.h"
#include "artune/status.h"

namespace artune::probes {

// Checks the options (kInvalidArgument: neither or both of pid/comm, comm too
// long, ring size not a power of two); acquires nothing.
Result<std::unique_ptr<CaptureBackend>> CreateEbpfBackend(const EbpfOptions& options);

}  // namespace artune::probes
