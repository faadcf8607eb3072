#include "artune/tuner/bench_run.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "artune/transport/adaptive_polling.h"
#include "artune/transport/credentials.h"
#include "artune/transport/devices.h"
#include "artune/transport/knobs.h"
#include "artune/transport/transport.h"
#include "artune/tuner/bench_record.h"
#include "artune/tuner/bench_transport.h"

namespace artune::tuner {
namespace {

using nlohmann::ordered_json;

// The CPU time the `artune serve` process at `address` has used, in seconds; an
// error when it cannot be asked (the figure is then left out, not guessed).
Result<double> PeerCpuSeconds(const std::string& address) {
  ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                          transport::CredentialsFromEnvironment());
  ARTUNE_ASSIGN_OR_RETURN(
      transport::Stats stats,
      transport::QueryServerStats(address, std::chrono::seconds(2), credentials));
  if (stats.process_cpu_ns == 0) {
    return Status::NotFound("the peer does not report its CPU time (an earlier version)");
  }
  return static_cast<double>(stats.process_cpu_ns) / 1e9;
}

AdaptiveShare AdaptiveOver(const transport::AdaptiveBackOffs& before,
                           const transport::AdaptiveBackOffs& after, double wall_s) {
  const double backed_off_s =
      static_cast<double>(after.backed_off_ns -
                          std::min(after.backed_off_ns, before.backed_off_ns)) /
      1e9;
  return {after.back_offs - std::min(after.back_offs, before.back_offs),
          std::clamp(backed_off_s / wall_s, 0.0, 1.0)};
}

// The knobs whose value in effect (what the server agreed) is not the one asked for.
std::vector<KnobFromPeer> KnobsFromPeer(const std::map<std::string, std::string>& requested,
                                        const std::map<std::string, std::string>& in_effect) {
  std::vector<KnobFromPeer> differ;
  for (const auto& [knob, value] : requested) {
    auto it = in_effect.find(knob);
    if (it != in_effect.end() && it->second != value) differ.push_back({knob, value, it->second});
  }
  return differ;
}

Result<std::unique_ptr<BenchTransport>> MakeTargetTransport(const BenchTarget& target,
                                                            const transport::Config& config) {
  if (target.transport == "grpc") return MakeGrpcServerTransport(target.grpc_threads, config);
  return MakeBenchTransport(target.transport, config);
}

// The run's servers: started here (kept in `servers`) without a peer, the peer's
// in `artune serve`'s port layout otherwise.
Result<std::vector<std::string>> ServerAddresses(
    const BenchTarget& target, const transport::Config& config, BenchTransport& transport,
    uint32_t server_count, std::vector<std::unique_ptr<BenchServer>>& servers) {
  std::vector<std::string> addresses;
  if (target.peer.empty()) {
    // Stock gRPC and the tcp fabric listen on 127.0.0.1; verbs on its RDMA netdev.
    ARTUNE_ASSIGN_OR_RETURN(const std::string host, target.transport == "grpc"
                                                        ? Result<std::string>("127.0.0.1")
                                                        : transport::LocalListenHost(config));
    ARTUNE_ASSIGN_OR_RETURN(servers, StartLoopbackServers(transport, server_count, host));
    for (auto& server : servers) addresses.push_back(server->address());
  } else {
    for (uint32_t i = 0; i < server_count; ++i) {
      ARTUNE_ASSIGN_OR_RETURN(std::string address,
                              ServerAddressFor(target.transport, target.peer, i));
      addresses.push_back(address);
    }
  }
  return addresses;
}

}  // namespace

Result<TransportRun> RunBenchTransport(const BenchTarget& target, const transport::Config& config,
                                       const Payload& payload, const RunOptions& options,
                                       db::FallbackStore& store, BenchRunObserver& observer) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<BenchTransport> transport,
                          MakeTargetTransport(target, config));
  const uint32_t server_count = options.kind == BenchmarkKind::kPs ? options.servers : 1;
  std::vector<std::unique_ptr<BenchServer>> servers;
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<std::string> addresses,
                          ServerAddresses(target, config, *transport, server_count, servers));
  observer.ServersAt(addresses);
  const bool peer_counts_cpu = !target.peer.empty() && target.transport == "artune";
  const Result<double> peer_cpu_before =
      peer_counts_cpu ? PeerCpuSeconds(addresses.front()) : Result<double>(0.0);
  const transport::AdaptiveBackOffs here_before = transport::ProcessAdaptiveBackOffs();
  const auto wall_before = std::chrono::steady_clock::now();
  auto result = RunBenchmark(*transport, addresses, payload, options);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  observer.Measured(result);
  if (!result.ok()) {
    return result.status().WithContext(target.transport + " " +
                                       std::string(BenchmarkName(options.kind)));
  }

  TransportRun run;
  run.transport = target.transport;
  run.fabric = transport->fabric();
  run.result = *result;
  if (target.transport == "artune" && wall_s > 0) {
    run.adaptive = AdaptiveOver(here_before, transport::ProcessAdaptiveBackOffs(), wall_s);
  }
  if (peer_counts_cpu && peer_cpu_before.ok() && wall_s > 0) {
    if (Result<double> after = PeerCpuSeconds(addresses.front()); after.ok()) {
      run.peer_cpu_cores = std::max(0.0, *after - *peer_cpu_before) / wall_s;
    }
  }
  if (peer_counts_cpu) {
    run.from_peer = KnobsFromPeer(transport::ConfigToMap(config), transport->EffectiveConfig());
    if (!run.from_peer.empty()) observer.KnobsFromPeer(run.from_peer);
  }
  db::BenchRun record = MakeBenchRunRecord(
      *transport, target.peer.empty() ? "loopback" : target.peer, payload, options, *result);
  ARTUNE_ASSIGN_OR_RETURN(const int64_t id, store.InsertBenchRun(record));
  // Kept in memory only (the file refused it): no run id anyone can look up.
  run.run_id = store.not_stored() ? 0 : id;
  return run;
}

Speedups CompareRuns(const RunResult& artune, const RunResult& grpc) {
  Speedups s;
  if (artune.latency_us.p50 > 0) s.latency_p50 = grpc.latency_us.p50 / artune.latency_us.p50;
  if (grpc.bandwidth_mbps > 0) s.bandwidth = artune.bandwidth_mbps / grpc.bandwidth_mbps;
  if (grpc.rpcs_per_s > 0) s.rpcs_per_s = artune.rpcs_per_s / grpc.rpcs_per_s;
  return s;
}

ordered_json BenchRunJson(const TransportRun& run, const RunOptions& options,
                          const Payload& payload, const std::string& peer) {
  const RunResult& r = run.result;
  ordered_json j;
  j["run_id"] = run.run_id > 0 ? ordered_json(run.run_id) : ordered_json(nullptr);
  j["transport"] = run.transport;
  j["fabric"] = run.fabric;
  j["benchmark"] = std::string(BenchmarkName(options.kind));
  j["scheme"] = std::string(SchemeName(payload.spec().scheme));
  j["classes"] =
      payload.spec().scheme == Scheme::kSkew ? "S,M,L" : FormatClasses(payload.spec().classes);
  j["buffers"] = payload.buffer_count();
  j["payload_bytes"] = payload.total_bytes();
  j["peer"] = peer.empty() ? "loopback" : peer;
  j["rpcs"] = r.rpcs;
  j["duration_s"] = r.duration_s;
  j["latency_us"] = {{"p50", r.latency_us.p50},      {"p99", r.latency_us.p99},
                     {"mean", r.latency_us.mean},    {"stddev", r.latency_us.stddev},
                     {"min", r.latency_us.min},      {"max", r.latency_us.max},
                     {"samples", r.latency_us.count}};
  j["bandwidth_mbps"] = r.bandwidth_mbps;
  j["rpcs_per_s"] = r.rpcs_per_s;
  j["cpu"] = {{"cores", run.cores()},
              {"this_process_cores", r.cpu_cores},
              {"peer_cores",
               run.peer_cpu_cores >= 0 ? ordered_json(run.peer_cpu_cores) : ordered_json(nullptr)},
              {"rpcs_per_core", run.rpcs_per_core()}};
  if (run.adaptive) {
    j["adaptive"] = {{"back_offs", run.adaptive->back_offs},
                     {"backed_off_share", run.adaptive->backed_off_share}};
  }
  j["validated"] = r.validated;
  if (!r.validated) j["validation_error"] = r.validation_error;
  if (options.kind == BenchmarkKind::kBandwidth) j["server_checksum"] = options.server_checksum;
  if (!peer.empty() && run.transport == "artune") {
    j["knobs_from_peer"] = ordered_json::array();
    for (const KnobFromPeer& knob : run.from_peer) {
      j["knobs_from_peer"].push_back(
          {{"knob", knob.knob}, {"requested", knob.requested}, {"in_effect", knob.in_effect}});
    }
  }
  return j;
}

ordered_json BenchRunsJson(const std::vector<TransportRun>& runs, const RunOptions& options,
                           const Payload& payload, const std::string& peer) {
  if (runs.size() == 1) return BenchRunJson(runs[0], options, payload, peer);
  ordered_json out;
  bool validated = true;
  for (const auto& run : runs) validated = validated && run.result.validated;
  out["transport"] = "both";
  out["benchmark"] = std::string(BenchmarkName(options.kind));
  out["scheme"] = std::string(SchemeName(payload.spec().scheme));
  out["payload_bytes"] = payload.total_bytes();
  out["validated"] = validated;
  out["runs"] = ordered_json::array();
  for (const auto& run : runs) out["runs"].push_back(BenchRunJson(run, options, payload, peer));
  Speedups s = CompareRuns(runs[0].result, runs[1].result);
  out["artune_vs_grpc"] = {
      {"latency_p50", s.latency_p50}, {"bandwidth", s.bandwidth}, {"rpcs_per_s", s.rpcs_per_s}};
  return out;
}

Result<PreparedBench> PrepareBench(const BenchRequest& request) {
  PreparedBench prepared;
  PayloadSpec& spec = prepared.spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, ParseScheme(request.scheme));
  std::string classes = request.classes;
  if (classes.empty()) classes = spec.scheme == Scheme::kRandom ? "S,M,L" : "S";
  ARTUNE_ASSIGN_OR_RETURN(spec.classes, ParseClasses(classes));
  spec.buffer_count = request.buffers;
  spec.class_bytes = {request.small_bytes, request.medium_bytes, request.large_bytes};
  spec.size_mode = request.size_mode == "random" ? SizeMode::kRandomInClass : SizeMode::kFixed;
  ARTUNE_ASSIGN_OR_RETURN(spec.skew, ParseSkewWeights(request.skew));
  spec.seed = request.seed;
  ARTUNE_RETURN_IF_ERROR(ValidateSpec(spec));
  RunOptions& options = prepared.options;
  ARTUNE_ASSIGN_OR_RETURN(options.kind, ParseBenchmark(request.benchmark));
  options.warmup_s = request.warmup_s;
  options.duration_s = request.duration_s;
  options.inflight = request.inflight;
  options.server_checksum = !request.no_checksum;
  if (request.no_checksum && options.kind != BenchmarkKind::kBandwidth) {
    return Status::InvalidArgument(
        "--no-checksum is for --benchmark bandwidth (latency and ps echo the payload back "
        "and the client checks it)");
  }
  options.servers = request.servers;
  options.clients = request.clients;
  ARTUNE_RETURN_IF_ERROR(ValidateRunOptions(options));
  return prepared;
}

Status BenchRunsStatus(const std::vector<TransportRun>& runs, db::FallbackStore& store) {
  bool validated = true;
  for (const auto& run : runs) validated = validated && run.result.validated;
  const Status not_stored = store.NotStoredStatus(
      runs.size() == 1 ? "the run above was not stored" : "the runs above were not stored");
  if (!validated) {
    return Status::Corruption(
        "a reply failed validation (payload checksum mismatch); the run " +
        std::string(not_stored.ok() ? "is stored with validated = false"
                                    : "is marked validated = false; " + not_stored.message()));
  }
  return not_stored;
}

}  // namespace artune::tuner
