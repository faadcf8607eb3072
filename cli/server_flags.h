// The stock gRPC server setup that `artune bench` (its loopback servers) and
// `artune serve` (the servers a remote bench calls) share: the --grpc-threads flag
// and the transport it configures, so the two start stock gRPC alike.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "artune/transport/config.h"
#include "artune/tuner/bench_transport.h"

namespace artune::cli {

// Adds --grpc-threads (completion-queue threads per stock gRPC server, 1..64) to
// `command`, described by `description` (each command says whose servers).
void AddGrpcThreadsFlag(CLI::App& command, int& threads, const std::string& description);

// Stock gRPC for the benchmarks: `threads` completion-queue threads per server, and
// the per-call timeout of `config` (the embedded transport's), so both transports
// give up on a call alike.
std::unique_ptr<tuner::BenchTransport> MakeGrpcServerTransport(int threads,
                                                               const transport::Config& config);

}  // namespace artune::cli
