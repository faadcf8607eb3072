#include "server_flags.h"

#include <chrono>

namespace artune::cli {

void AddGrpcThreadsFlag(CLI::App& command, int& threads, const std::string& description) {
  command.add_option("--grpc-threads", threads, description)
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

std::unique_ptr<tuner::BenchTransport> MakeGrpcServerTransport(int threads,
                                                               const transport::Config& config) {
  tuner::GrpcBenchOptions options;
  options.server_threads = threads;
  options.timeout = std::chrono::milliseconds(config.timeout_ms);
  return tuner::MakeGrpcBenchTransport(options);
}

}  // namespace artune::cli
