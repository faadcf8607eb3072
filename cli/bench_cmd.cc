// artune bench: the TF-gRPC-Bench benchmarks (P2P latency, P2P bandwidth, PS
// throughput) over the embedded transport and stock gRPC, side by side; every run
// validated and stored. Flags and printing over the tuner's runs (artune/tuner/bench_run.h).
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "artune/db/fallback_store.h"
#include "artune/db/store.h"
#include "artune/tuner/bench_run.h"
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
  tuner::BenchRequest request;  // the payload and how the run goes
  std::string transport = "artune";
  std::string peer;
  int grpc_threads = 2;
  bool json = false;
};

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

// Says on stderr what a bench run does as it goes on: its servers and outcome with
// --verbose, and the knobs a peer kept.
class BenchRunPrinter final : public tuner::BenchRunObserver {
 public:
  BenchRunPrinter(ProgressLine& progress, std::string label, std::string peer)
      : progress_(progress), label_(std::move(label)), peer_(std::move(peer)) {}

  void ServersAt(const std::vector<std::string>& addresses) override {
    for (const std::string& address : addresses) progress_.Detail(label_ + ": server " + address);
  }
  void Measured(const Result<tuner::RunResult>& result) override {
    progress_.Clear();
    if (!result.ok()) return;
    progress_.Detail(label_ + ": " + std::to_string(result->rpcs) + " calls in " +
                     FormatDuration(result->duration_s) +
                     (result->validated ? ", validated" : ", validation FAILED"));
  }
  void KnobsFromPeer(const std::vector<tuner::KnobFromPeer>& knobs) override {
    for (const tuner::KnobFromPeer& knob : knobs) {
      std::cerr << "note: the peer runs " << knob.knob << " = " << knob.in_effect
                << ", and so did this run (asked for " << knob.requested
                << "): a server keeps its own live knobs for its connections; `artune apply "
                   "config --live "
                << peer_ << " --set " << knob.knob << "=" << knob.requested << "` changes them\n";
    }
  }

 private:
  ProgressLine& progress_;
  const std::string label_;
  const std::string peer_;
};

Result<tuner::TransportRun> RunOne(const std::string& transport_name, const BenchFlags& flags,
                                   const transport::Config& config, const tuner::Payload& payload,
                                   tuner::RunOptions options, db::FallbackStore& store,
                                   Context& context) {
  const std::string label = transport_name + " " + flags.request.benchmark;
  ProgressLine progress(context);
  if (progress.drawing()) {
    options.progress = [&progress, &label](const tuner::Progress& p) {
      progress.Update(label + ": " + (p.warming_up ? "warming up " : "measuring ") +
                      ProgressBar(p.phase_s > 0 ? p.elapsed_s / p.phase_s : 0) + " " +
                      FormatDuration(p.elapsed_s) + "/" + FormatDuration(p.phase_s) + ", " +
                      std::to_string(p.rpcs) + " calls");
    };
  }
  BenchRunPrinter printer(progress, label, flags.peer);
  const tuner::BenchTarget target{transport_name, flags.peer, flags.grpc_threads};
  return tuner::RunBenchTransport(target, config, payload, options, store, printer);
}

void PrintHuman(const std::vector<tuner::TransportRun>& runs, const BenchFlags& flags,
                const tuner::Payload& payload, const tuner::RunOptions& options) {
  const auto& spec = payload.spec();
  std::cout << "benchmark  " << flags.request.benchmark;
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
  for (const tuner::TransportRun& run : runs) {
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
    tuner::Speedups s = tuner::CompareRuns(runs[0].result, runs[1].result);
    std::cout << std::setprecision(2) << "\nartune vs grpc: p50 latency " << s.latency_p50
              << "x lower, bandwidth " << s.bandwidth << "x, RPC/s " << s.rpcs_per_s << "x\n";
  }
  for (const tuner::TransportRun& run : runs) {
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
  for (const tuner::TransportRun& run : runs) {
    if (!run.result.validated) {
      std::cout << run.transport << ": validation failed: " << run.result.validation_error << "\n";
    }
  }
}

Status Bench(const BenchFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::PreparedBench prepared, tuner::PrepareBench(flags.request));
  const tuner::RunOptions& options = prepared.options;
  ARTUNE_ASSIGN_OR_RETURN(tuner::Payload payload, tuner::GeneratePayload(prepared.spec));
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
  std::vector<tuner::TransportRun> runs;
  for (const std::string& name : transports) {
    ARTUNE_ASSIGN_OR_RETURN(tuner::TransportRun run,
                            RunOne(name, flags, loaded.config, payload, options, *store, context));
    runs.push_back(std::move(run));
  }

  if (flags.json) {
    ordered_json out = tuner::BenchRunsJson(runs, options, payload, flags.peer);
    out["stored"] = !store->not_stored().has_value();
    if (store->not_stored()) out["not_stored"] = store->not_stored()->message();
    std::cout << out.dump(2) << "\n";
  } else {
    PrintHuman(runs, flags, payload, options);
  }
  return tuner::BenchRunsStatus(runs, *store);
}

// The payload each call carries: the TF-gRPC-Bench scheme, its buffer classes and
// sizes, and the seed.
void AddBenchPayloadFlags(CLI::App& command, BenchFlags& flags) {
  command
      .add_option("--scheme", flags.request.scheme,
                  "uniform (buffers split evenly over --classes), random (>= 2 classes, "
                  "random placement), skew (classes by --skew weights)")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  command.add_option("--classes", flags.request.classes,
                     "Buffer classes: S [1 B,1 KiB), M [1 KiB,1 MiB), L [1 MiB,10 MiB], e.g. "
                     "S,M,L (default: S for uniform, S,M,L for random; skew ignores it)");
  command.add_option("--buffers", flags.request.buffers, "Buffers per payload")
      ->check(CLI::Range(1u, tuner::kMaxBuffers))
      ->capture_default_str();
  command
      .add_option("--small-bytes", flags.request.small_bytes, "Size of a Small buffer (1..1023)")
      ->capture_default_str();
  command
      .add_option("--medium-bytes", flags.request.medium_bytes,
                  "Size of a Medium buffer (1024..1048575)")
      ->capture_default_str();
  command
      .add_option("--large-bytes", flags.request.large_bytes,
                  "Size of a Large buffer (1048576..10485760)")
      ->capture_default_str();
  command
      .add_option("--size-mode", flags.request.size_mode,
                  "fixed (every buffer of a class has the class size) or random (seeded "
                  "uniform sizes over each class's range)")
      ->check(CLI::IsMember({"fixed", "random"}))
      ->capture_default_str();
  command
      .add_option("--skew", flags.request.skew,
                  "Skew bias: large (S,M,L = 10,30,60), medium (20,60,20), small (60,30,10), "
                  "or three weights S,M,L such as 5,15,80")
      ->capture_default_str();
  command.add_option("--seed", flags.request.seed, "Payload seed (same seed, same payload)")
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
      ->add_option("--benchmark", flags->request.benchmark,
                   "latency (echo, one call at a time), bandwidth (server acknowledges, "
                   "--inflight calls in flight; MB/s), ps (--servers x --clients, every "
                   "client calls every server; RPC/s)")
      ->check(CLI::IsMember({"latency", "bandwidth", "ps"}))
      ->capture_default_str();
  AddBenchPayloadFlags(*command, *flags);
  command
      ->add_option("--warmup", flags->request.warmup_s,
                   "Warm-up seconds (calls made, not measured)")
      ->capture_default_str();
  command->add_option("--duration", flags->request.duration_s, "Measured seconds")
      ->capture_default_str();
  command
      ->add_option("--inflight", flags->request.inflight,
                   "Calls in flight: bandwidth per connection, ps per client-server pair")
      ->capture_default_str();
  command->add_flag("--no-checksum", flags->request.no_checksum,
                    "bandwidth: the server counts the bytes instead of checksumming them (as "
                    "ucx_perftest, which checks nothing); replies are validated by length only");
  command->add_option("--servers", flags->request.servers, "ps: parameter servers")
      ->capture_default_str();
  command->add_option("--clients", flags->request.clients, "ps: clients (workers)")
      ->capture_default_str();
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
