// `artune bench` as text: the benchmark and its payload, one row per transport
// run (latency, bandwidth, rate, cores, validated, the stored run's id), the
// speedups of artune over stock gRPC when both ran, whose cores were counted and
// the runs that failed validation. Prints to the stream given; no errors.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "artune/tuner/bench_run.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/payload.h"

namespace artune::report {

// benchmark: "latency", "bandwidth" or "ps"; peer: the `artune serve` measured
// against, empty on loopback.
void PrintBenchText(const std::vector<tuner::TransportRun>& runs, const std::string& benchmark,
                    const std::string& peer, const tuner::Payload& payload,
                    const tuner::RunOptions& options, std::ostream& out);

}  // namespace artune::report
