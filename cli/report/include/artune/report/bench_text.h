// The benchmarks as text: `artune bench`'s runs, a stored bench run (`artune
// results`, `results show ID`) and the TF-like workload's step (`artune workload`).
// Prints to the stream given; no errors.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "artune/db/store.h"

#include "artune/tuner/bench_run.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/payload.h"
#include "artune/tuner/tf_workload.h"

namespace artune::report {

// The benchmark and its payload, one row per transport run (latency, bandwidth,
// rate, cores, validated, the stored run's id), the speedups of artune over stock
// gRPC when both ran, whose cores were counted and the runs that failed validation.
// benchmark: "latency", "bandwidth" or "ps"; peer: the `artune serve` measured
// against, empty on loopback.
void PrintBenchText(const std::vector<tuner::TransportRun>& runs, const std::string& benchmark,
                    const std::string& peer, const tuner::Payload& payload,
                    const tuner::RunOptions& options, std::ostream& out);

// `results show ID`: the run's summary, then its config and parameters.
void PrintStoredBenchRun(const db::BenchRun& run, std::ostream& out);

// `results`: the row of one stored run (ID, time, transport, benchmark, scheme,
// payload, p50, p99, MB/s, RPC/s, validated).
std::vector<std::string> StoredBenchRunRow(const db::BenchRun& run);

// `artune workload`: the model, the cluster, the steps and their time, the tensors
// pulled and whether every reply validated; scale < 1 notes a scaled model.
void PrintTfWorkloadText(const tuner::TfWorkloadOptions& options,
                         const tuner::TfWorkloadResult& result, double scale, std::ostream& out);

}  // namespace artune::report
