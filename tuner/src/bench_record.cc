#include "artune/tuner/bench_record.h"

#include "artune/base/number_text.h"
#include "hostname.h"

namespace artune::tuner {
namespace {

std::string Number(double value) { return Printf("%g", value); }

}  // namespace

std::map<std::string, std::string> RunParameters(const PayloadSpec& spec,
                                                 const RunOptions& options) {
  std::map<std::string, std::string> p;
  p["scheme"] = std::string(SchemeName(spec.scheme));
  p["classes"] = spec.scheme == Scheme::kSkew ? "S,M,L" : FormatClasses(spec.classes);
  p["buffers"] = std::to_string(spec.buffer_count);
  p["small_bytes"] = std::to_string(spec.class_bytes[0]);
  p["medium_bytes"] = std::to_string(spec.class_bytes[1]);
  p["large_bytes"] = std::to_string(spec.class_bytes[2]);
  p["size_mode"] = spec.size_mode == SizeMode::kFixed ? "fixed" : "random";
  p["skew_weights"] = FormatSkewWeights(spec.skew);
  p["seed"] = std::to_string(spec.seed);
  p["benchmark"] = std::string(BenchmarkName(options.kind));
  p["warmup_s"] = Number(options.warmup_s);
  p["duration_s"] = Number(options.duration_s);
  p["inflight"] = std::to_string(options.inflight);
  if (options.kind == BenchmarkKind::kBandwidth && !options.server_checksum) {
    p["server_checksum"] = "off";
  }
  if (options.kind == BenchmarkKind::kPs) {
    p["servers"] = std::to_string(options.servers);
    p["clients"] = std::to_string(options.clients);
  }
  return p;
}

db::BenchRun MakeBenchRunRecord(const BenchTransport& transport, const std::string& peer,
                                const Payload& payload, const RunOptions& options,
                                const RunResult& result) {
  db::BenchRun run;
  run.host = LocalHostname();
  run.peer = peer;
  run.transport = std::string(transport.name());
  run.benchmark = std::string(BenchmarkName(options.kind));
  run.scheme = std::string(SchemeName(payload.spec().scheme));
  run.fabric = transport.fabric();
  run.config = transport.EffectiveConfig();
  run.parameters = RunParameters(payload.spec(), options);
  if (!result.validated) run.parameters["validation_error"] = result.validation_error;
  run.payload_bytes = result.payload_bytes;
  run.duration_s = result.duration_s;
  run.rpcs = result.rpcs;
  run.latency = {result.latency_us.p50, result.latency_us.p99, result.latency_us.mean,
                 result.latency_us.stddev};
  run.bandwidth_mbps = result.bandwidth_mbps;
  run.rpcs_per_s = result.rpcs_per_s;
  run.validated = result.validated;
  return run;
}

nlohmann::ordered_json StoredBenchRunJson(const db::BenchRun& run) {
  nlohmann::ordered_json j;
  j["id"] = run.id;
  j["started_at"] = run.started_at;
  j["host"] = run.host;
  j["peer"] = run.peer;
  j["transport"] = run.transport;
  j["benchmark"] = run.benchmark;
  j["scheme"] = run.scheme;
  j["fabric"] = run.fabric;
  j["payload_bytes"] = run.payload_bytes;
  j["duration_s"] = run.duration_s;
  j["rpcs"] = run.rpcs;
  j["latency_us"] = {{"p50", run.latency.p50_us},
                     {"p99", run.latency.p99_us},
                     {"mean", run.latency.mean_us},
                     {"stddev", run.latency.stddev_us}};
  j["bandwidth_mbps"] = run.bandwidth_mbps;
  j["rpcs_per_s"] = run.rpcs_per_s;
  j["validated"] = run.validated;
  j["config"] = run.config;
  j["parameters"] = run.parameters;
  return j;
}

}  // namespace artune::tuner
