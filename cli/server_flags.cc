#include "server_flags.h"

#include <pthread.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "artune/transport/credentials.h"

namespace artune::cli {

void AddGrpcThreadsFlag(CLI::App& command, int& threads, const std::string& description) {
  command.add_option("--grpc-threads", threads, description)
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

Status CreateTokenFileBeyondLoopback(const std::string& listen, std::string_view command,
                                     std::string_view copy_advice) {
  const std::string host = listen.substr(0, listen.rfind(':'));
  const std::string token_path = transport::DefaultTokenPath();
  if (transport::IsLoopbackHost(host) || std::filesystem::exists(token_path)) return Status::Ok();
  ARTUNE_RETURN_IF_ERROR(transport::CreateTokenFile(token_path).status());
  std::cerr << command << ": created the token file " << token_path << " (0600); " << copy_advice
            << "\n";
  return Status::Ok();
}

}  // namespace artune::cli
