// The server setup that `artune bench` (its loopback servers), `artune serve` (the
// servers a remote bench or sweep calls) and `artune sweep --mpi` (each rank's
// servers) share: the --grpc-threads flag (which tuner::MakeGrpcServerTransport
// takes) and the port layout of a serving host, so all of them start servers alike. The
// long-running servers (`artune serve`, `artune relay`) also share how they wait for
// SIGINT/SIGTERM and the token file they make beyond loopback. The servers
// themselves start in the tuner (artune/tuner/bench_servers.h).
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "artune/status.h"

namespace artune::cli {

// Adds --grpc-threads (completion-queue threads per stock gRPC server, 1..64) to
// `command`, described by `description` (each command says whose servers).
void AddGrpcThreadsFlag(CLI::App& command, int& threads, const std::string& description);

// Blocks SIGINT and SIGTERM in the calling thread and returns that set. Call it
// before any server thread exists: every thread inherits the mask, so sigwait on the
// returned set is the only place the signals are delivered.
sigset_t BlockStopSignals();

// Beyond loopback every server authenticates (transport/credentials.h). When the host
// of `listen` (HOST:PORT) is not loopback and the token file (DefaultTokenPath) does
// not exist yet, creates it (0600) and tells stderr
// "<command>: created the token file PATH (0600); <copy_advice>", where copy_advice
// says who needs the file. Errors: creating the file failed.
Status CreateTokenFileBeyondLoopback(const std::string& listen, std::string_view command,
                                     std::string_view copy_advice);

}  // namespace artune::cli
