// The text of `artune bench` (bench_text.h).
#include "artune/report/bench_text.h"

#include <iomanip>
#include <sstream>
#include <utility>

#include "artune/report/text_table.h"
#include "artune/tuner/payload.h"

namespace artune::report {
namespace {

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

}  // namespace

void PrintBenchText(const std::vector<tuner::TransportRun>& runs, const std::string& benchmark,
                    const std::string& peer, const tuner::Payload& payload,
                    const tuner::RunOptions& options, std::ostream& out) {
  const auto& spec = payload.spec();
  out << "benchmark  " << benchmark;
  if (options.kind == tuner::BenchmarkKind::kPs) {
    out << " (" << options.servers << " servers x " << options.clients << " clients)";
  }
  out << "\npayload    " << tuner::SchemeName(spec.scheme) << ", " << payload.buffer_count()
      << " buffers";
  if (spec.scheme == tuner::Scheme::kSkew) {
    out << ", weights S,M,L " << tuner::FormatSkewWeights(spec.skew);
  } else {
    out << " of " << tuner::FormatClasses(spec.classes);
  }
  out << ", " << HumanBytes(payload.total_bytes()) << " per call (seed " << spec.seed
      << ")\npeer       " << (peer.empty() ? "loopback" : peer) << "\n\n";
  out << std::left << std::setw(10) << "transport" << std::setw(7) << "fabric" << std::right
      << std::setw(10) << "calls" << std::setw(11) << "p50 us" << std::setw(11) << "p99 us"
      << std::setw(11) << "mean us" << std::setw(11) << "stddev" << std::setw(11) << "MB/s"
      << std::setw(11) << "RPC/s" << std::setw(7) << "cores" << std::setw(11) << "RPC/core"
      << std::setw(11) << "validated" << std::setw(7) << "run"
      << "\n";
  for (const tuner::TransportRun& run : runs) {
    const auto& r = run.result;
    out << std::left << std::setw(10) << run.transport << std::setw(7)
        << (run.fabric.empty() ? "-" : run.fabric) << std::right << std::setw(10) << r.rpcs
        << std::fixed << std::setprecision(1) << std::setw(11) << r.latency_us.p50 << std::setw(11)
        << r.latency_us.p99 << std::setw(11) << r.latency_us.mean << std::setw(11)
        << r.latency_us.stddev << std::setw(11) << r.bandwidth_mbps << std::setw(11) << r.rpcs_per_s
        << std::setprecision(2) << std::setw(7) << run.cores() << std::setprecision(0)
        << std::setw(11) << run.rpcs_per_core() << std::setprecision(1) << std::setw(11)
        << (r.validated ? "yes" : "NO") << std::setw(7)
        << (run.run_id > 0 ? std::to_string(run.run_id) : "-") << "\n";
  }
  if (runs.size() == 2) {
    tuner::Speedups s = tuner::CompareRuns(runs[0].result, runs[1].result);
    out << std::setprecision(2) << "\nartune vs grpc: p50 latency " << s.latency_p50
        << "x lower, bandwidth " << s.bandwidth << "x, RPC/s " << s.rpcs_per_s << "x\n";
  }
  for (const tuner::TransportRun& run : runs) {
    if (run.peer_cpu_cores >= 0) {
      out << std::setprecision(2) << run.transport << " cores: " << run.result.cpu_cores
          << " this process (measured phase) + " << run.peer_cpu_cores
          << " the peer's (whole run, warm-up included)\n";
    } else if (!peer.empty()) {
      out << run.transport
          << " cores: this process only (the peer's CPU time is not known: stock gRPC, "
             "or a peer of an earlier version)\n";
    }
  }
  for (const tuner::TransportRun& run : runs) {
    if (!run.result.validated) {
      out << run.transport << ": validation failed: " << run.result.validation_error << "\n";
    }
  }
}

std::vector<std::string> StoredBenchRunRow(const db::BenchRun& run) {
  return {std::to_string(run.id),
          ShortTime(run.started_at),
          run.transport,
          run.benchmark,
          run.scheme,
          FormatHumanBytes(run.payload_bytes),
          FormatNumber(run.latency.p50_us, 1),
          FormatNumber(run.latency.p99_us, 1),
          FormatNumber(run.bandwidth_mbps, 1),
          FormatNumber(run.rpcs_per_s, 0),
          run.validated ? "yes" : "NO"};
}

void PrintStoredBenchRun(const db::BenchRun& run, std::ostream& out) {
  out << "Bench run " << run.id << "\n";
  const std::string latency = "p50 " + FormatNumber(run.latency.p50_us, 2) + " µs, p99 " +
                              FormatNumber(run.latency.p99_us, 2) + " µs, mean " +
                              FormatNumber(run.latency.mean_us, 2) + " µs, stddev " +
                              FormatNumber(run.latency.stddev_us, 2) + " µs";
  std::vector<std::vector<std::string>> summary = {
      {"  started", run.started_at},
      {"  host", run.host},
      {"  peer", run.peer},
      {"  transport", run.transport + (run.fabric.empty() ? "" : " over " + run.fabric)},
      {"  benchmark", run.benchmark},
      {"  scheme", run.scheme},
      {"  payload",
       FormatHumanBytes(run.payload_bytes) + " (" + std::to_string(run.payload_bytes) + " bytes)"},
      {"  duration", FormatNumber(run.duration_s, 2) + " s, " + std::to_string(run.rpcs) + " RPCs"},
      {"  latency", latency},
      {"  bandwidth", FormatNumber(run.bandwidth_mbps, 1) + " MB/s"},
      {"  throughput", FormatNumber(run.rpcs_per_s, 1) + " RPC/s"},
      {"  validated", run.validated ? "yes (every response checksum matched)" : "NO"},
  };
  PrintTable(summary, {}, out);
  for (const auto& [title, pairs] :
       {std::pair{"Config", &run.config}, std::pair{"Parameters", &run.parameters}}) {
    out << title << (pairs->empty() ? ": (none)\n" : ":\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& [key, value] : *pairs) rows.push_back({"  " + key, value});
    PrintTable(rows, {}, out);
  }
}

void PrintTfWorkloadText(const tuner::TfWorkloadOptions& options,
                         const tuner::TfWorkloadResult& result, double scale, std::ostream& out) {
  const uint64_t small = tuner::SmallVariableCount(options.variables);
  out << "model      ResNet-50" << (scale < 1 ? " (scaled)" : "") << ", "
      << options.variables.size() << " variables (" << small << " <= 1 KiB), "
      << FormatHumanBytes(result.model_bytes) << "\n"
      << "cluster    " << options.parameter_servers << " parameter server(s), " << options.workers
      << " worker(s) on 127.0.0.1, gRPC\n"
      << std::fixed << std::setprecision(2) << "steps      " << result.steps << " in "
      << result.duration_s << " s (" << result.steps_per_s << " steps/s)\n"
      << "step time  p50 " << result.step_ms.p50 << " ms, p99 " << result.step_ms.p99 << " ms\n"
      << "RecvTensor " << result.recv_tensor_calls << " calls, " << result.tensor_mbps
      << " MB/s of tensors\n"
      << "validated  " << (result.validated ? "yes" : "NO: " + result.validation_error) << "\n";
}

}  // namespace artune::report
