// How a benchmark run becomes a stored record (db::BenchRun): the parameters that
// reproduce it, the transport's effective config and the results. Shared by
// `artune bench` and the sweep, so both store runs the same way; and the stored
// record's JSON (`artune results --json`, `results show ID --json`).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "artune/db/store.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {

// Every workload and run parameter, as text: scheme, classes, buffers, class sizes,
// size mode, skew weights, seed, warm-up, duration, inflight, servers, clients.
std::map<std::string, std::string> RunParameters(const PayloadSpec& spec,
                                                 const RunOptions& options);

// `peer` is the remote address, or "loopback". The host is this machine's name.
db::BenchRun MakeBenchRunRecord(const BenchTransport& transport, const std::string& peer,
                                const Payload& payload, const RunOptions& options,
                                const RunResult& result);

// id, started_at, host, peer, transport, benchmark, scheme, fabric, payload_bytes,
// duration_s, rpcs, latency_us {p50, p99, mean, stddev}, bandwidth_mbps,
// rpcs_per_s, validated, config, parameters.
nlohmann::ordered_json StoredBenchRunJson(const db::BenchRun& run);

}  // namespace artune::tuner
