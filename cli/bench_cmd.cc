// artune bench: the TF-gRPC-Bench benchmarks (P2P latency, P2P bandwidth, PS
// throughput) over the embedded transport and stock gRPC, side by side; every run
// validated and stored. Flags and printing over the tuner's runs (artune/tuner/bench_run.h).
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artune/db/fallback_store.h"
#include "artune/db/store.h"
#include "artune/report/bench_text.h"
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
    report::PrintBenchText(runs, flags.request.benchmark, flags.peer, payload, options, std::cout);
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
