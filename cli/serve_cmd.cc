// artune serve: hosts the benchmark servers of both transports for a remote
// `artune bench --peer`, until SIGINT or SIGTERM.
//
// Port layout (the same rule ServerAddressFor gives bench): with --listen HOST:PORT,
// server i of the embedded transport listens on PORT+2i (its gRPC control plane;
// the fabric picks its own data port during the handshake) and the stock gRPC
// server i on PORT+2i+1.
#include <pthread.h>
#include <signal.h>

#include <cstring>
#include <initializer_list>
#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/tuner/bench_transport.h"
#include "command.h"
#include "knob_flags.h"

namespace artune::cli {
namespace {

struct ServeFlags {
  KnobFlags knobs;
  std::string listen = "0.0.0.0:50051";
  std::string transport = "both";
  uint32_t servers = 2;
  int grpc_threads = 2;
  bool json = false;
};

std::string PortOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// How often `serve --listen HOST:0` picks a new base port when a port after the
// picked one is taken.
constexpr int kPickPortAttempts = 8;

struct StartedServers {
  std::string base;  // HOST:PORT of the first server
  nlohmann::ordered_json listening = nlohmann::ordered_json::array();
  std::vector<std::unique_ptr<tuner::BenchServer>> servers;
};

// Starts every server of `flags` at `base` (with pick_port, the first at port 0
// and the rest after the port it got). On a failure the servers already started
// are shut down (by their destructors) and the error names the server.
Result<StartedServers> StartServers(const ServeFlags& flags,
                                    std::initializer_list<tuner::BenchTransport*> transports,
                                    std::string base, bool pick_port) {
  StartedServers started;
  for (uint32_t i = 0; i < flags.servers; ++i) {
    for (tuner::BenchTransport* transport : transports) {
      std::string name(transport->name());
      if (flags.transport != "both" && flags.transport != name) continue;
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
      started.listening.push_back({{"transport", name},
                                   {"server", i},
                                   {"address", (*server)->address()},
                                   {"fabric", transport->fabric()}});
      started.servers.push_back(std::move(*server));
    }
  }
  started.base = base;
  return started;
}

Status Serve(const ServeFlags& flags) {
  // Block the stop signals before any server thread exists, so every thread
  // inherits the mask and sigwait below is the only place they are delivered.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  auto artune = tuner::MakeArtuneBenchTransport(loaded.config);
  tuner::GrpcBenchOptions grpc_options;
  grpc_options.server_threads = flags.grpc_threads;
  grpc_options.timeout = std::chrono::milliseconds(loaded.config.timeout_ms);
  auto grpc = tuner::MakeGrpcBenchTransport(grpc_options);

  // With port 0 the first server picks the base port and the others follow it.
  std::string base = flags.listen;
  const bool pick_port = PortOf(base) == "0";
  if (!pick_port) {  // checks the address, and that the last server's port exists
    ARTUNE_RETURN_IF_ERROR(
        tuner::ServerAddressFor("grpc", base, static_cast<int>(flags.servers) - 1).status());
  }
  // A picked base port says nothing of the ports after it: another process may hold
  // one. Then everything started is stopped and a new base is picked, a few times.
  Result<StartedServers> started = Status::Internal("no attempt");
  for (int attempt = 0; attempt < (pick_port ? kPickPortAttempts : 1); ++attempt) {
    started = StartServers(flags, {artune.get(), grpc.get()}, base, pick_port);
    if (started.ok()) break;
  }
  if (!started.ok()) return started.status();
  base = started->base;
  if (!flags.json) {
    for (const auto& server : started->listening) {
      const std::string fabric = server.at("fabric");
      std::cout << "artune serve: " << std::string(server.at("transport")) << " server "
                << server.at("server").get<uint32_t>() << " on "
                << std::string(server.at("address"))
                << (fabric.empty() ? "" : " (fabric " + fabric + ")") << "\n";
    }
  }
  const nlohmann::ordered_json& listening = started->listening;
  std::vector<std::unique_ptr<tuner::BenchServer>>& servers = started->servers;
  if (flags.json) {
    std::cout << nlohmann::ordered_json{{"base", base}, {"servers", listening}}.dump() << "\n";
  } else {
    std::cout << "artune serve: ready; bench with: artune bench --peer " << base
              << " --transport both (Ctrl-C stops)\n";
  }
  std::cout.flush();

  int received = 0;
  sigwait(&stop_signals, &received);
  if (!flags.json) std::cout << "artune serve: " << strsignal(received) << ", stopping\n";
  for (auto& server : servers) server->Shutdown();
  return Status::Ok();
}

}  // namespace

void RegisterServe(CLI::App& root, Context& context) {
  auto flags = std::make_shared<ServeFlags>();
  auto* command = root.add_subcommand(
      "serve",
      "Serve the benchmarks of the embedded transport and stock gRPC for a remote "
      "`artune bench --peer`, until SIGINT/SIGTERM");
  command
      ->add_option("--listen", flags->listen,
                   "HOST:PORT. Server i of the embedded transport listens on PORT+2i, stock "
                   "gRPC server i on PORT+2i+1; port 0 picks a free base port")
      ->capture_default_str();
  command->add_option("--transport", flags->transport, "artune, grpc or both")
      ->check(CLI::IsMember({"artune", "grpc", "both"}))
      ->capture_default_str();
  command
      ->add_option("--servers", flags->servers,
                   "Servers per transport (bench --benchmark ps --servers N needs N)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  command
      ->add_option("--grpc-threads", flags->grpc_threads,
                   "Completion-queue threads per stock gRPC server")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_flag("--json", flags->json,
                    "Print the listening addresses as one JSON line instead of text");
  AddKnobFlags(*command, flags->knobs);
  command->footer(
      "Example: artune serve --listen 0.0.0.0:50051   (peer: artune bench --peer "
      "HOST:50051 --transport both)");
  command->callback(
      [flags, &context] { RunCommand(context, [&]() -> Status { return Serve(*flags); }); });
}

}  // namespace artune::cli
