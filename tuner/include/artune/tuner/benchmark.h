// The TF-gRPC-Bench benchmarks over any BenchTransport (bench_transport.h):
//
//   latency    one channel, one call at a time (echo); every round trip timed.
//   bandwidth  one channel, `inflight` calls kept in flight (ack: the server only
//              returns a checksum); MB/s of payload delivered.
//   ps         N servers x M clients, every client calls every server (echo, like a
//              worker pulling parameters); `inflight` calls per client-server pair;
//              aggregate RPC/s.
//
// Each run: warm-up (calls made, nothing recorded), then the measured duration.
// Every reply is validated; the first mismatch stops the run and is reported in
// RunResult (validated = false, validation_error), not as an error Status, so a
// caller can still store the failed run. Transport failures (a peer that went
// away, a timeout) end the run with that error Status.
//
// Reuse: RunBenchmark connects channels itself; RunLatency / RunBandwidth / RunPs
// run over channels a caller already holds (the sweep keeps its connections and
// reconfigures between trials).
//
// Threading: a run blocks the calling thread and uses transport threads plus one
// driver thread per PS client. Progress callbacks run on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/payload.h"
#include "artune/tuner/stats.h"

namespace artune::tuner {

enum class BenchmarkKind : uint8_t { kLatency, kBandwidth, kPs };
std::string_view BenchmarkName(BenchmarkKind kind);  // "latency", "bandwidth", "ps"
Result<BenchmarkKind> ParseBenchmark(std::string_view text);

struct Progress {
  bool warming_up = false;
  double elapsed_s = 0;  // within the current phase
  double phase_s = 0;    // length of the current phase
  uint64_t rpcs = 0;     // completed in the measured phase so far
};
using ProgressFn = std::function<void(const Progress&)>;

struct RunOptions {
  BenchmarkKind kind = BenchmarkKind::kLatency;
  double warmup_s = 1.0;
  double duration_s = 5.0;
  // bandwidth: calls in flight on the channel; ps: per client-server pair.
  uint32_t inflight = 8;
  // bandwidth: the server checksums what it received (ack) or only counts it
  // (count: for comparisons with benchmarks that check nothing).
  bool server_checksum = true;
  // ps only.
  uint32_t servers = 2;
  uint32_t clients = 3;
  // Called about every 100 ms; may be empty.
  ProgressFn progress;
  // Latency samples kept for the summary; past this, reservoir sampling keeps a
  // uniform subset (a 0-byte echo can make millions of calls).
  size_t max_latency_samples = 1'000'000;
};

// kInvalidArgument naming the field for non-positive durations, zero inflight,
// servers or clients, or more than 64 of either.
Status ValidateRunOptions(const RunOptions& options);

struct RunResult {
  uint64_t rpcs = 0;             // completed and validated in the measured phase
  uint64_t payload_bytes = 0;    // bytes of one request payload
  uint64_t bytes_delivered = 0;  // request payload bytes of the counted calls
  double duration_s = 0;         // measured phase, wall clock
  uint32_t passes = 0;           // RunReplay: measured passes over the replay list
  Summary latency_us;            // per call, microseconds
  double bandwidth_mbps = 0;     // bytes_delivered / duration, in 10^6 bytes/s
  double rpcs_per_s = 0;
  bool validated = false;        // every reply of the run (warm-up too) checked out
  std::string validation_error;  // the first mismatch, when !validated
  // CPU cores this process kept busy over the measured phase (its CPU time over the
  // phase's wall time, every thread): with the servers in this process, what both
  // ends cost; with a peer, the client's side. 0 when the phase was too short to tell.
  double cpu_cores = 0;
};

// This process's CPU time so far (user and system, every thread), in seconds.
double ProcessCpuSeconds();

Result<RunResult> RunLatency(BenchChannel& channel, const Payload& payload,
                             const RunOptions& options);
Result<RunResult> RunBandwidth(BenchChannel& channel, const Payload& payload,
                               const RunOptions& options);
// channels[c][s]: client c's channel to server s (all clients see the same servers).
Result<RunResult> RunPs(const std::vector<std::vector<BenchChannel*>>& channels,
                        const Payload& payload, const RunOptions& options);

// Connects what the benchmark needs to `server_addresses` (latency and bandwidth
// use the first; ps one channel per client per server, options.servers of them)
// and runs it.
Result<RunResult> RunBenchmark(BenchTransport& transport,
                               const std::vector<std::string>& server_addresses,
                               const Payload& payload, const RunOptions& options);

// Starts `count` servers of `transport` in this process on `host` (free ports) for
// a run with no peer; they serve until destroyed. Over tcp and stock gRPC the host
// is 127.0.0.1; a verbs config needs an address of its RDMA netdev
// (transport::LocalListenHost), since the RDMA connection manager cannot bind
// loopback.
Result<std::vector<std::unique_ptr<BenchServer>>> StartLoopbackServers(
    BenchTransport& transport, uint32_t count, const std::string& host = "127.0.0.1");

}  // namespace artune::tuner
