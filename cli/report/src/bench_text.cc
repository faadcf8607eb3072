// The text of `artune bench` (bench_text.h).
#include "artune/report/bench_text.h"

#include <iomanip>
#include <sstream>

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

}  // namespace artune::report
