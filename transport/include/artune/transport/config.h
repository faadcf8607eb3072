// The embedded transport's configuration: every knob, its value and where the value
// came from. The declarative knob table (knobs.h) is the single place that names,
// documents, bounds and parses these fields; everything else (TOML loader,
// environment overrides, CLI flags, `artune config show`, the tuner's search space,
// database columns) is generated from that table.
#pragma once

#include <cstdint>
#include <string>

#include "artune/status.h"

namespace artune::transport {

// Values are on the wire (control plane) and in stores: new fabrics go at the end.
enum class FabricKind { kTcp, kVerbs, kAuto, kShm };
// kAdaptive spins for poll_spin_us after the last activity, then sleeps; while the
// host has no core to spare (more threads runnable than CPUs, or a spin that lost
// its core) it sleeps at once, as kEvent does, backing off 20 ms to 1 s before it
// tries again. kBusy always spins: for hosts that give it dedicated cores.
enum class PollingMode { kBusy, kEvent, kAdaptive };
// Where a server runs handlers registered as non-blocking (HandlerOptions): kAuto
// on the fabric's progress thread as soon as the request is whole (no thread
// hand-off on the call path), kOff always on a worker thread. Handlers not
// declared non-blocking always run on a worker, so one that blocks never stalls
// other connections.
enum class HandlerInline { kAuto, kOff };

// Plain values. A Config is copied freely; it is valid only after Validate()
// (knobs.h) accepted it, which every loader and every transport entry point does.
struct Config {
  // Messages slices of at most this many bytes are copied into pre-registered
  // buffers and sent two-sided; larger ones use rendezvous (receiver reads).
  uint64_t eager_threshold = 16 * 1024;
  // Rendezvous reads larger than this are cut into chunks of this size.
  uint64_t chunk_size = 512 * 1024;
  // Chunk reads in flight at once for one rendezvous transfer.
  uint32_t pipeline_depth = 4;
  // Bytes of small slices (of one message or of queued messages) packed into one
  // eager buffer before it is sent.
  uint64_t coalesce_limit = 16 * 1024;
  // Calls in flight per connection; further calls wait for a slot.
  uint32_t max_outstanding = 64;
  // Pre-registered eager receive buffers per connection (also the send credits).
  uint32_t eager_buffer_count = 64;
  FabricKind fabric = FabricKind::kAuto;
  // Adaptive by default: busy polling's round trip while calls flow (15 us against
  // event's 33-63 us over tcp, bench/side-by-side.md), no CPU when idle, and
  // event's behaviour when every core is busy (bench/side-by-side.md, issue 26).
  PollingMode polling = PollingMode::kAdaptive;
  // kAdaptive: how long a thread waiting for completions spins before it sleeps.
  uint32_t poll_spin_us = 50;
  // Default per-call deadline; a call may set its own.
  uint32_t timeout_ms = 10000;
  HandlerInline handler_inline = HandlerInline::kAuto;
  // Server: a data connection with no call in flight that receives nothing for
  // this long is closed (within twice this), giving back its receive pool; its
  // client opens a new one on its next call. Local to each end, set at start.
  uint32_t idle_timeout_ms = 300'000;

  // Verbs fabric (fabric/verbs/). Local to each end: never negotiated over the
  // control plane (each host names its own device), so a client keeps its own.
  // Device: 0 = auto (the first device with an ACTIVE port), N = the N-th device
  // in `artune devices` order (1-based).
  uint32_t verbs_device = 0;
  // Port of that device: 0 = the port the connection's IP address resolves to.
  uint32_t verbs_port = 0;
  // GID table index; kVerbsGidAuto = the GID of the connection's IP address
  // (RoCEv2 IPv4-mapped where present), as the RDMA connection manager resolves it.
  uint32_t verbs_gid_index = 256;
  // Path MTU in bytes (256, 512, 1024, 2048, 4096); 0 = the port's active MTU.
  uint32_t verbs_mtu = 0;
  // Sends up to this many bytes go inline in the work request (no DMA read of the
  // buffer); clamped to what the device grants. 256: a 100 B call's request and
  // response packets (40 B header, slice entry, method name) fit, so the small-call
  // path is inline and, with selective signalling, mostly unsignalled.
  uint32_t verbs_inline_size = 256;
  // QP ACK timeout exponent: 4.096 us * 2^n before a retransmission (14 ~ 67 ms;
  // Soft-RoCE under emulation needs ~17).
  uint32_t verbs_qp_timeout = 14;
  // Retransmissions before a send or read fails with IBV_WC_RETRY_EXC_ERR.
  uint32_t verbs_retry_count = 7;
};

inline constexpr uint32_t kVerbsGidAuto = 256;

// Checks every knob against its range and the cross-knob rules (for example an
// eager buffer must hold a whole eager slice). The error names the knob, the value
// and the allowed range. Implemented from the knob table.
Status ValidateConfig(const Config& config);

// Bytes of one eager buffer: the largest payload the eager path ever packs
// (max(eager_threshold, coalesce_limit)) plus the per-packet header.
uint64_t EagerBufferBytes(const Config& config);

}  // namespace artune::transport
