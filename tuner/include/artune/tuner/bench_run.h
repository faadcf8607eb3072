// One run of `artune bench` over one transport: its servers (in this process, or a
// remote `artune serve`), the benchmark, the peer's CPU time and the knobs the peer
// kept, and the stored record; and the JSON shape of the runs. The command keeps its
// flags, its progress line and its table; what happens as the run goes on reaches it
// through a BenchRunObserver.
//
// Threading: RunBenchTransport blocks the calling thread; the observer is called on
// it (RunOptions::progress as benchmark.h says).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/fallback_store.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {

// Where a run goes.
struct BenchTarget {
  std::string transport;  // "artune" | "grpc"
  // HOST:PORT of a remote `artune serve` (ServerAddressFor gives server i); empty:
  // the servers run in this process.
  std::string peer;
  int grpc_threads = 2;  // completion-queue threads of a loopback stock gRPC server
};

// A knob the peer's value won for: a server keeps its own live knobs for the
// connections it accepts, so a requested value reaches only servers this run starts.
struct KnobFromPeer {
  std::string knob, requested, in_effect;
};

// Adaptive polling's state over a run (warm-up included): back-offs to sleeping
// started, and the share of the run's wall time spent backed off (1: the waiters
// slept as event polling does throughout; 0: they could spin throughout).
struct AdaptiveShare {
  uint64_t back_offs = 0;
  double backed_off_share = 0;
};

struct TransportRun {
  std::string transport;
  std::string fabric;
  RunResult result;
  int64_t run_id = 0;                   // 0 when the store kept it in memory only
  std::vector<KnobFromPeer> from_peer;  // against a peer only
  // The serving process's CPU cores over the whole run (warm-up included), from its
  // counters (artune against a peer only); < 0 when not known.
  double peer_cpu_cores = -1;
  // artune runs only: adaptive polling in this process (the callers'; a peer's
  // serving threads have their own, which `artune serve` does not report).
  std::optional<AdaptiveShare> adaptive;

  // Both ends' cores: this process's alone when the servers run here.
  double cores() const { return result.cpu_cores + std::max(0.0, peer_cpu_cores); }
  double rpcs_per_core() const { return cores() > 0 ? result.rpcs_per_s / cores() : 0; }
};

// What a run tells its caller as it goes on, in this order.
class BenchRunObserver {
 public:
  virtual ~BenchRunObserver() = default;
  // The servers the run calls, before it starts.
  virtual void ServersAt(const std::vector<std::string>& addresses) = 0;
  // The benchmark is over (its result, or the error the run then returns).
  virtual void Measured(const Result<RunResult>& result) = 0;
  // Against a peer, the knobs whose value in effect is not the one asked for
  // (called only when there are some).
  virtual void KnobsFromPeer(const std::vector<KnobFromPeer>& knobs) = 0;
};

// Starts the servers (none against a peer), runs the benchmark of `options` with
// `payload` over `target.transport` with `config` (stock gRPC takes only its
// per-call timeout) and stores the run in `store`. Errors: the transport's, the
// servers', the benchmark's (with "TRANSPORT BENCHMARK" as context) and the
// store's. A reply that failed validation is no error: the run says so.
Result<TransportRun> RunBenchTransport(const BenchTarget& target, const transport::Config& config,
                                       const Payload& payload, const RunOptions& options,
                                       db::FallbackStore& store, BenchRunObserver& observer);

// artune over grpc: > 1 means artune is better (for latency: grpc / artune).
struct Speedups {
  double latency_p50 = 0, bandwidth = 0, rpcs_per_s = 0;
};
Speedups CompareRuns(const RunResult& artune, const RunResult& grpc);

// One run: run_id (null when not stored), transport, fabric, benchmark, scheme,
// classes, buffers, payload_bytes, peer ("loopback" without one), rpcs,
// duration_s, latency_us {p50 p99 mean stddev min max samples}, bandwidth_mbps,
// rpcs_per_s, cpu {cores this_process_cores peer_cores rpcs_per_core},
// validated, validation_error (when not), server_checksum (bandwidth),
// knobs_from_peer (artune against a peer).
nlohmann::ordered_json BenchRunJson(const TransportRun& run, const RunOptions& options,
                                    const Payload& payload, const std::string& peer);

// Several runs side by side: transport "both", benchmark, scheme, payload_bytes,
// validated, runs [BenchRunJson], artune_vs_grpc {latency_p50 bandwidth
// rpcs_per_s} (CompareRuns of the first two); one run: its BenchRunJson.
nlohmann::ordered_json BenchRunsJson(const std::vector<TransportRun>& runs,
                                     const RunOptions& options, const Payload& payload,
                                     const std::string& peer);

// What `artune bench` asks for besides its knobs and where it runs: the payload
// (scheme, classes, sizes, seed) and how the run goes.
struct BenchRequest {
  std::string benchmark = "latency";  // ParseBenchmark text
  std::string scheme = "uniform";
  std::string classes;  // empty: the scheme's default (S,M,L for random, else S)
  uint32_t buffers = 10;
  uint64_t small_bytes = 10, medium_bytes = 10 * 1024, large_bytes = 1024 * 1024;
  std::string size_mode = "fixed";  // or "random" (in class)
  std::string skew = "large";
  uint64_t seed = 1;
  double warmup_s = 1;
  double duration_s = 5;
  uint32_t inflight = 8;
  bool no_checksum = false;  // bandwidth only: the server skips checking
  uint32_t servers = 2;
  uint32_t clients = 3;
};

struct PreparedBench {
  PayloadSpec spec;
  RunOptions options;
};

// The request's payload spec and run options, checked. Errors (kInvalidArgument),
// in this order: the scheme's, classes' and skew's parsers and ValidateSpec, the
// benchmark's name, --no-checksum with a benchmark that echoes the payload,
// ValidateRunOptions.
Result<PreparedBench> PrepareBench(const BenchRequest& request);

// What a bench of `runs` ends with: kCorruption when a reply failed validation
// (saying whether the run is stored with validated = false), else the store's
// NotStoredStatus.
Status BenchRunsStatus(const std::vector<TransportRun>& runs, db::FallbackStore& store);

}  // namespace artune::tuner
