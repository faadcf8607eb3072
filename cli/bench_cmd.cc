// artune bench: the TF-gRPC-Bench benchmarks (P2P latency, P2P bandwidth, PS
// throughput) over the embedded transport and stock gRPC, side by side; every run
// validated and stored. Thin over the tuner library (artune/tuner/benchmark.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "artune/db/fallback_store.h"
#include "artune/db/store.h"
#include "artune/transport/credentials.h"
#include "artune/transport/devices.h"
#include "artune/transport/knobs.h"
#include "artune/transport/transport.h"
#include "artune/tuner/bench_record.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "command.h"
#include "knob_flags.h"
#include "progress.h"
#include "server_flags.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

struct BenchFlags {
  KnobFlags knobs;
  std::string transport = "artune";
  std::string benchmark = "latency";
  std::string scheme = "uniform";
  std::string classes;  // empty: the scheme's default
  uint32_t buffers = 10;
  uint64_t small_bytes = 10, medium_bytes = 10 * 1024, large_bytes = 1024 * 1024;
  std::string size_mode = "fixed";
  std::string skew = "large";
  uint64_t seed = 1;
  double warmup_s = 1;
  double duration_s = 5;
  uint32_t inflight = 8;
  bool no_checksum = false;
  uint32_t servers = 2;
  uint32_t clients = 3;
  std::string peer;
  int grpc_threads = 2;
  bool json = false;
};

// A knob the peer's value won for: a server keeps its own live knobs for the
// connections it accepts, so `--set` reaches only servers this bench starts.
struct KnobFromPeer {
  std::string knob, requested, in_effect;
};

struct TransportRun {
  std::string transport;
  std::string fabric;
  tuner::RunResult result;
  int64_t run_id = 0;
  std::vector<KnobFromPeer> from_peer;  // against --peer only
  // The serving process's CPU cores over the whole run (warm-up included), from its
  // counters (artune --peer only); < 0 when not known.
  double peer_cpu_cores = -1;

  // Both ends' cores: this process's alone when the servers run here.
  double cores() const { return result.cpu_cores + std::max(0.0, peer_cpu_cores); }
  double rpcs_per_core() const { return cores() > 0 ? result.rpcs_per_s / cores() : 0; }
};

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

Result<tuner::PayloadSpec> SpecFromFlags(const BenchFlags& flags) {
  tuner::PayloadSpec spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, tuner::ParseScheme(flags.scheme));
  std::string classes = flags.classes;
  if (classes.empty()) classes = spec.scheme == tuner::Scheme::kRandom ? "S,M,L" : "S";
  ARTUNE_ASSIGN_OR_RETURN(spec.classes, tuner::ParseClasses(classes));
  spec.buffer_count = flags.buffers;
  spec.class_bytes = {flags.small_bytes, flags.medium_bytes, flags.large_bytes};
  spec.size_mode =
      flags.size_mode == "random" ? tuner::SizeMode::kRandomInClass : tuner::SizeMode::kFixed;
  ARTUNE_ASSIGN_OR_RETURN(spec.skew, tuner::ParseSkewWeights(flags.skew));
  spec.seed = flags.seed;
  ARTUNE_RETURN_IF_ERROR(tuner::ValidateSpec(spec));
  return spec;
}

std::string HumanBytes(uint64_t bytes) {
  std::ostringstream out;
  if (bytes >= 1024 * 1024) {
    out << std::fixed << std::setprecision(2) << bytes / (1024.0 * 1024.0) << " MiB";
  } else if (bytes >= 1024) {
    out << std::fixed << std::setprecision(1) << bytes / 1024.0 << " KiB";
  } else {
    out << bytes << " B";
  }
  return out.str();
}

Result<TransportRun> RunOne(const std::string& transport_name, const BenchFlags& flags,
                            const transport::Config& config, const tuner::Payload& payload,
                            tuner::RunOptions options, db::FallbackStore& store, Context& context) {
  std::unique_ptr<tuner::BenchTransport> transport;
  if (transport_name == "grpc") {
    transport = MakeGrpcServerTransport(flags.grpc_threads, config);
  } else {
    ARTUNE_ASSIGN_OR_RETURN(transport, tuner::MakeBenchTransport(transport_name, config));
  }
  uint32_t server_count = options.kind == tuner::BenchmarkKind::kPs ? options.servers : 1;
  std::vector<std::unique_ptr<tuner::BenchServer>> servers;
  std::vector<std::string> addresses;
  if (flags.peer.empty()) {
    // Stock gRPC and the tcp fabric listen on 127.0.0.1; verbs on its RDMA netdev.
    ARTUNE_ASSIGN_OR_RETURN(const std::string host, transport_name == "grpc"
                                                        ? Result<std::string>("127.0.0.1")
                                                        : transport::LocalListenHost(config));
    ARTUNE_ASSIGN_OR_RETURN(servers, tuner::StartLoopbackServers(*transport, server_count, host));
    for (auto& server : servers) addresses.push_back(server->address());
  } else {
    for (uint32_t i = 0; i < server_count; ++i) {
      ARTUNE_ASSIGN_OR_RETURN(std::string address,
                              tuner::ServerAddressFor(transport_name, flags.peer, i));
      addresses.push_back(address);
    }
  }
  const std::string label = transport_name + " " + flags.benchmark;
  ProgressLine progress(context);
  for (const std::string& address : addresses) progress.Detail(label + ": server " + address);
  if (progress.drawing()) {
    options.progress = [&progress, &label](const tuner::Progress& p) {
      progress.Update(label + ": " + (p.warming_up ? "warming up " : "measuring ") +
                      ProgressBar(p.phase_s > 0 ? p.elapsed_s / p.phase_s : 0) + " " +
                      FormatDuration(p.elapsed_s) + "/" + FormatDuration(p.phase_s) + ", " +
                      std::to_string(p.rpcs) + " calls");
    };
  }
  const bool peer_counts_cpu = !flags.peer.empty() && transport_name == "artune";
  const Result<double> peer_cpu_before =
      peer_counts_cpu ? PeerCpuSeconds(addresses.front()) : Result<double>(0.0);
  const auto wall_before = std::chrono::steady_clock::now();
  auto result = tuner::RunBenchmark(*transport, addresses, payload, options);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  progress.Clear();
  if (!result.ok()) return result.status().WithContext(label);
  progress.Detail(label + ": " + std::to_string(result->rpcs) + " calls in " +
                  FormatDuration(result->duration_s) +
                  (result->validated ? ", validated" : ", validation FAILED"));

  TransportRun run;
  run.transport = transport_name;
  run.fabric = transport->fabric();
  run.result = *result;
  if (peer_counts_cpu && peer_cpu_before.ok() && wall_s > 0) {
    if (Result<double> after = PeerCpuSeconds(addresses.front()); after.ok()) {
      run.peer_cpu_cores = std::max(0.0, *after - *peer_cpu_before) / wall_s;
    }
  }
  if (!flags.peer.empty() && transport_name == "artune") {
    run.from_peer = KnobsFromPeer(transport::ConfigToMap(config), transport->EffectiveConfig());
    for (const KnobFromPeer& knob : run.from_peer) {
      std::cerr << "note: the peer runs " << knob.knob << " = " << knob.in_effect
                << ", and so did this run (asked for " << knob.requested
                << "): a server keeps its own live knobs for its connections; `artune apply "
                   "config --live "
                << flags.peer << " --set " << knob.knob << "=" << knob.requested
                << "` changes them\n";
    }
  }
  db::BenchRun record = tuner::MakeBenchRunRecord(
      *transport, flags.peer.empty() ? "loopback" : flags.peer, payload, options, *result);
  ARTUNE_ASSIGN_OR_RETURN(const int64_t id, store.InsertBenchRun(record));
  // Kept in memory only (the file refused it): no run id anyone can look up.
  run.run_id = store.not_stored() ? 0 : id;
  return run;
}

ordered_json RunJson(const TransportRun& run, const BenchFlags& flags,
                     const tuner::Payload& payload) {
  const tuner::RunResult& r = run.result;
  ordered_json j;
  j["run_id"] = run.run_id > 0 ? ordered_json(run.run_id) : ordered_json(nullptr);
  j["transport"] = run.transport;
  j["fabric"] = run.fabric;
  j["benchmark"] = flags.benchmark;
  j["scheme"] = std::string(tuner::SchemeName(payload.spec().scheme));
  j["classes"] = payload.spec().scheme == tuner::Scheme::kSkew
                     ? "S,M,L"
                     : tuner::FormatClasses(payload.spec().classes);
  j["buffers"] = payload.buffer_count();
  j["payload_bytes"] = payload.total_bytes();
  j["peer"] = flags.peer.empty() ? "loopback" : flags.peer;
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
  j["validated"] = r.validated;
  if (!r.validated) j["validation_error"] = r.validation_error;
  if (flags.benchmark == "bandwidth") j["server_checksum"] = !flags.no_checksum;
  if (!flags.peer.empty() && run.transport == "artune") {
    j["knobs_from_peer"] = ordered_json::array();
    for (const KnobFromPeer& knob : run.from_peer) {
      j["knobs_from_peer"].push_back(
          {{"knob", knob.knob}, {"requested", knob.requested}, {"in_effect", knob.in_effect}});
    }
  }
  return j;
}

// artune over grpc: > 1 means artune is better (for latency: grpc / artune).
struct Speedups {
  double latency_p50 = 0, bandwidth = 0, rpcs_per_s = 0;
};
Speedups Compare(const tuner::RunResult& artune, const tuner::RunResult& grpc) {
  Speedups s;
  if (artune.latency_us.p50 > 0) s.latency_p50 = grpc.latency_us.p50 / artune.latency_us.p50;
  if (grpc.bandwidth_mbps > 0) s.bandwidth = artune.bandwidth_mbps / grpc.bandwidth_mbps;
  if (grpc.rpcs_per_s > 0) s.rpcs_per_s = artune.rpcs_per_s / grpc.rpcs_per_s;
  return s;
}

void PrintHuman(const std::vector<TransportRun>& runs, const BenchFlags& flags,
                const tuner::Payload& payload, const tuner::RunOptions& options) {
  const auto& spec = payload.spec();
  std::cout << "benchmark  " << flags.benchmark;
  if (options.kind == tuner::BenchmarkKind::kPs) {
    std::cout << " (" << options.servers << " servers x " << options.clients << " clients)";
  }
  std::cout << "\npayload    " << tuner::SchemeName(spec.scheme) << ", " << payload.buffer_count()
            << " buffers";
  if (spec.scheme == tuner::Scheme::kSkew) {
    std::cout << ", weights S,M,L " << tuner::FormatSkewWeights(spec.skew);
  } else {
    std::cout << " of " << tuner::FormatClasses(spec.classes);
  }
  std::cout << ", " << HumanBytes(payload.total_bytes()) << " per call (seed " << spec.seed
            << ")\npeer       " << (flags.peer.empty() ? "loopback" : flags.peer) << "\n\n";
  std::cout << std::left << std::setw(10) << "transport" << std::setw(7) << "fabric" << std::right
            << std::setw(10) << "calls" << std::setw(11) << "p50 us" << std::setw(11) << "p99 us"
            << std::setw(11) << "mean us" << std::setw(11) << "stddev" << std::setw(11) << "MB/s"
            << std::setw(11) << "RPC/s" << std::setw(7) << "cores" << std::setw(11) << "RPC/core"
            << std::setw(11) << "validated" << std::setw(7) << "run"
            << "\n";
  for (const TransportRun& run : runs) {
    const auto& r = run.result;
    std::cout << std::left << std::setw(10) << run.transport << std::setw(7)
              << (run.fabric.empty() ? "-" : run.fabric) << std::right << std::setw(10) << r.rpcs
              << std::fixed << std::setprecision(1) << std::setw(11) << r.latency_us.p50
              << std::setw(11) << r.latency_us.p99 << std::setw(11) << r.latency_us.mean
              << std::setw(11) << r.latency_us.stddev << std::setw(11) << r.bandwidth_mbps
              << std::setw(11) << r.rpcs_per_s << std::setprecision(2) << std::setw(7)
              << run.cores() << std::setprecision(0) << std::setw(11) << run.rpcs_per_core()
              << std::setprecision(1) << std::setw(11) << (r.validated ? "yes" : "NO")
              << std::setw(7) << (run.run_id > 0 ? std::to_string(run.run_id) : "-") << "\n";
  }
  if (runs.size() == 2) {
    Speedups s = Compare(runs[0].result, runs[1].result);
    std::cout << std::setprecision(2) << "\nartune vs grpc: p50 latency " << s.latency_p50
              << "x lower, bandwidth " << s.bandwidth << "x, RPC/s " << s.rpcs_per_s << "x\n";
  }
  for (const TransportRun& run : runs) {
    if (run.peer_cpu_cores >= 0) {
      std::cout << std::setprecision(2) << run.transport << " cores: " << run.result.cpu_cores
                << " this process (measured phase) + " << run.peer_cpu_cores
                << " the peer's (whole run, warm-up included)\n";
    } else if (!flags.peer.empty()) {
      std::cout << run.transport
                << " cores: this process only (the peer's CPU time is not known: stock gRPC, "
                   "or a peer of an earlier version)\n";
    }
  }
  for (const TransportRun& run : runs) {
    if (!run.result.validated) {
      std::cout << run.transport << ": validation failed: " << run.result.validation_error << "\n";
    }
  }
}

Status Bench(const BenchFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_ASSIGN_OR_RETURN(tuner::PayloadSpec spec, SpecFromFlags(flags));
  tuner::RunOptions options;
  ARTUNE_ASSIGN_OR_RETURN(options.kind, tuner::ParseBenchmark(flags.benchmark));
  options.warmup_s = flags.warmup_s;
  options.duration_s = flags.duration_s;
  options.inflight = flags.inflight;
  options.server_checksum = !flags.no_checksum;
  if (flags.no_checksum && options.kind != tuner::BenchmarkKind::kBandwidth) {
    return Status::InvalidArgument(
        "--no-checksum is for --benchmark bandwidth (latency and ps echo the payload back "
        "and the client checks it)");
  }
  options.servers = flags.servers;
  options.clients = flags.clients;
  ARTUNE_RETURN_IF_ERROR(tuner::ValidateRunOptions(options));
  ARTUNE_ASSIGN_OR_RETURN(tuner::Payload payload, tuner::GeneratePayload(spec));
  // Looked at before measuring: a store that cannot be written is said at once,
  // and the runs are measured and printed all the same.
  ARTUNE_ASSIGN_OR_RETURN(
      auto store,
      db::FallbackStore::Open(db::ResolveDatabasePath(context.globals.db_path), std::cerr));

  std::vector<std::string> transports;
  if (flags.transport == "both") {
    transports = {"artune", "grpc"};
  } else {
    transports = {flags.transport};
  }
  std::vector<TransportRun> runs;
  for (const std::string& name : transports) {
    ARTUNE_ASSIGN_OR_RETURN(TransportRun run,
                            RunOne(name, flags, loaded.config, payload, options, *store, context));
    runs.push_back(std::move(run));
  }

  bool validated = true;
  for (const auto& run : runs) validated = validated && run.result.validated;
  if (flags.json) {
    ordered_json out;
    if (runs.size() == 1) {
      out = RunJson(runs[0], flags, payload);
    } else {
      out["transport"] = "both";
      out["benchmark"] = flags.benchmark;
      out["scheme"] = std::string(tuner::SchemeName(spec.scheme));
      out["payload_bytes"] = payload.total_bytes();
      out["validated"] = validated;
      out["runs"] = ordered_json::array();
      for (const auto& run : runs) out["runs"].push_back(RunJson(run, flags, payload));
      Speedups s = Compare(runs[0].result, runs[1].result);
      out["artune_vs_grpc"] = {
          {"latency_p50", s.latency_p50}, {"bandwidth", s.bandwidth}, {"rpcs_per_s", s.rpcs_per_s}};
    }
    out["stored"] = !store->not_stored().has_value();
    if (store->not_stored()) out["not_stored"] = store->not_stored()->message();
    std::cout << out.dump(2) << "\n";
  } else {
    PrintHuman(runs, flags, payload, options);
  }
  const Status not_stored = store->NotStoredStatus(
      runs.size() == 1 ? "the run above was not stored" : "the runs above were not stored");
  if (!validated) {
    return Status::Corruption(
        "a reply failed validation (payload checksum mismatch); the run " +
        std::string(not_stored.ok() ? "is stored with validated = false"
                                    : "is marked validated = false; " + not_stored.message()));
  }
  return not_stored;
}

// The payload each call carries: the TF-gRPC-Bench scheme, its buffer classes and
// sizes, and the seed.
void AddBenchPayloadFlags(CLI::App& command, BenchFlags& flags) {
  command
      .add_option("--scheme", flags.scheme,
                  "uniform (buffers split evenly over --classes), random (>= 2 classes, "
                  "random placement), skew (classes by --skew weights)")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  command.add_option("--classes", flags.classes,
                     "Buffer classes: S [1 B,1 KiB), M [1 KiB,1 MiB), L [1 MiB,10 MiB], e.g. "
                     "S,M,L (default: S for uniform, S,M,L for random; skew ignores it)");
  command.add_option("--buffers", flags.buffers, "Buffers per payload")
      ->check(CLI::Range(1u, tuner::kMaxBuffers))
      ->capture_default_str();
  command.add_option("--small-bytes", flags.small_bytes, "Size of a Small buffer (1..1023)")
      ->capture_default_str();
  command
      .add_option("--medium-bytes", flags.medium_bytes, "Size of a Medium buffer (1024..1048575)")
      ->capture_default_str();
  command
      .add_option("--large-bytes", flags.large_bytes, "Size of a Large buffer (1048576..10485760)")
      ->capture_default_str();
  command
      .add_option("--size-mode", flags.size_mode,
                  "fixed (every buffer of a class has the class size) or random (seeded "
                  "uniform sizes over each class's range)")
      ->check(CLI::IsMember({"fixed", "random"}))
      ->capture_default_str();
  command
      .add_option("--skew", flags.skew,
                  "Skew bias: large (S,M,L = 10,30,60), medium (20,60,20), small (60,30,10), "
                  "or three weights S,M,L such as 5,15,80")
      ->capture_default_str();
  command.add_option("--seed", flags.seed, "Payload seed (same seed, same payload)")
      ->capture_default_str();
}

}  // namespace

void RegisterBench(CLI::App& root, Context& context) {
  auto flags = std::make_shared<BenchFlags>();
  auto* command = root.add_subcommand(
      "bench",
      "Run a TF-gRPC-Bench benchmark (P2P latency, P2P bandwidth, PS throughput) over the "
      "embedded transport and/or stock gRPC; every reply is validated and every run stored");
  command
      ->add_option("--transport", flags->transport,
                   "artune (the embedded transport), grpc (stock gRPC over HTTP/2), or both "
                   "(side by side)")
      ->check(CLI::IsMember({"artune", "grpc", "both"}))
      ->capture_default_str();
  command
      ->add_option("--benchmark", flags->benchmark,
                   "latency (echo, one call at a time), bandwidth (server acknowledges, "
                   "--inflight calls in flight; MB/s), ps (--servers x --clients, every "
                   "client calls every server; RPC/s)")
      ->check(CLI::IsMember({"latency", "bandwidth", "ps"}))
      ->capture_default_str();
  AddBenchPayloadFlags(*command, *flags);
  command->add_option("--warmup", flags->warmup_s, "Warm-up seconds (calls made, not measured)")
      ->capture_default_str();
  command->add_option("--duration", flags->duration_s, "Measured seconds")->capture_default_str();
  command
      ->add_option("--inflight", flags->inflight,
                   "Calls in flight: bandwidth per connection, ps per client-server pair")
      ->capture_default_str();
  command->add_flag("--no-checksum", flags->no_checksum,
                    "bandwidth: the server counts the bytes instead of checksumming them (as "
                    "ucx_perftest, which checks nothing); replies are validated by length only");
  command->add_option("--servers", flags->servers, "ps: parameter servers")->capture_default_str();
  command->add_option("--clients", flags->clients, "ps: clients (workers)")->capture_default_str();
  command
      ->add_option(
          "--peer", flags->peer,
          "HOST:PORT of a remote `artune serve --listen HOST:PORT`; server i of the "
          "peer is artune on PORT+2i and stock gRPC on PORT+2i+1. Without --peer "
          "the servers run in this process on 127.0.0.1 (verbs: on the RDMA netdev's address)")
      ->check(HostPortValidator());
  AddGrpcThreadsFlag(*command, flags->grpc_threads,
                     "Completion-queue threads of a loopback stock gRPC server");
  command->add_flag("--json", flags->json, "Print one JSON object instead of the table");
  AddKnobFlags(*command, flags->knobs);
  command->footer(
      "Examples:\n"
      "  artune bench --transport both --scheme uniform --classes S\n"
      "  artune bench --transport both --benchmark bandwidth --scheme skew\n"
      "  artune bench --transport both --benchmark ps --servers 2 --clients 3 --classes M\n"
      "Exit code 3 when a reply fails validation (the run is still stored). When the store "
      "(--db) cannot be written the runs are measured and printed all the same (run id \"-\"; "
      "--json: \"stored\": false, \"not_stored\": why, \"run_id\": null), stderr says why, and "
      "the exit code is 1.");
  command->callback([flags, &context] {
    RunCommand(context, [&]() -> Status { return Bench(*flags, context); });
  });
}

}  // namespace artune::cli
