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

namespace {

std::string PortOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// How often a picked base port is given up for another when a port after it is
// taken.
constexpr int kPickPortAttempts = 8;

// One attempt at StartBenchServers (with pick_port, the first server at port 0 and
// the rest after the port it got).
Result<StartedServers> StartServersOnce(std::initializer_list<tuner::BenchTransport*> transports,
                                        const std::string& only, uint32_t servers, std::string base,
                                        bool pick_port) {
  StartedServers started;
  for (uint32_t i = 0; i < servers; ++i) {
    for (tuner::BenchTransport* transport : transports) {
      std::string name(transport->name());
      if (only != "both" && only != name) continue;
      std::string address;
      if (pick_port && started.servers.empty()) {
        address = base;
      } else {
        ARTUNE_ASSIGN_OR_RETURN(address, tuner::ServerAddressFor(name, base, static_cast<int>(i)));
      }
      auto server = transport->StartServer(address);
      if (!server.ok()) {
        for (auto& running : started.servers) running->Shutdown();
        return server.status().WithContext(name + " server " + std::to_string(i));
      }
      if (pick_port && started.servers.empty()) {
        // The picked port is the base: PORT for artune server 0, or PORT-1 when only
        // grpc runs (grpc server i sits on PORT+2i+1).
        int port = std::stoi(PortOf((*server)->address())) - (name == "grpc" ? 1 : 0);
        base = base.substr(0, base.rfind(':')) + ":" + std::to_string(port);
      }
      nlohmann::ordered_json entry = {{"transport", name},
                                      {"server", i},
                                      {"address", (*server)->address()},
                                      {"fabric", transport->fabric()}};
      if (std::string data = (*server)->data_endpoint(); !data.empty()) {
        entry["data_endpoint"] = data;
      }
      started.listening.push_back(std::move(entry));
      started.servers.push_back(std::move(*server));
    }
  }
  started.base = base;
  return started;
}

}  // namespace

Result<StartedServers> StartBenchServers(std::initializer_list<tuner::BenchTransport*> transports,
                                         const std::string& only, uint32_t servers,
                                         const std::string& listen) {
  const bool pick_port = PortOf(listen) == "0";
  if (!pick_port) {  // checks the address, and that the last server's port exists
    ARTUNE_RETURN_IF_ERROR(
        tuner::ServerAddressFor("grpc", listen, static_cast<int>(servers) - 1).status());
  }
  // A picked base port says nothing of the ports after it: another process may hold
  // one. Then everything started is stopped and a new base is picked, a few times.
  Result<StartedServers> started = Status::Internal("no attempt");
  for (int attempt = 0; attempt < (pick_port ? kPickPortAttempts : 1); ++attempt) {
    started = StartServersOnce(transports, only, servers, listen, pick_port);
    if (started.ok()) break;
  }
  return started;
}

}  // namespace artune::cli
