// artune serve: hosts the benchmark servers of both transports for a remote
// `artune bench --peer`, until SIGINT or SIGTERM.
//
// Port layout (the same rule ServerAddressFor gives bench): with --listen HOST:PORT,
// server i of the embedded transport listens on PORT+2i (its gRPC control plane;
// the fabric picks its own data port during the handshake) and the stock gRPC
// server i on PORT+2i+1. Loopback unless --listen names another address; then
// authenticated (transport/credentials.h).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "artune/transport/credentials.h"
#include "artune/tuner/bench_transport.h"
#include "command.h"
#include "knob_flags.h"
#include "server_flags.h"

namespace artune::cli {
namespace {

struct ServeFlags {
  KnobFlags knobs;
  std::string listen = "127.0.0.1:50051";
  std::string transport = "both";
  uint32_t servers = 2;
  int grpc_threads = 2;
  bool json = false;
};

std::string PortOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// How often `serve --listen HOST:0` picks a new base port when one of its ports
// is taken.
constexpr int kPickPortAttempts = 16;

// A random base port for `--listen HOST:0` with room for `ports` ports after it,
// outside the kernel's ephemeral range (net.ipv4.ip_local_port_range). The kernel
// hands a bind to port 0 an odd port and outgoing connections even ones, so the
// port after a bound one is where other processes' connections and their
// TIME_WAIT sit: under a busy test suite every one of 8 such picks was taken.
// Below (or above) the ephemeral range only listening servers hold ports.
int RandomBasePort(int ports) {
  int low = 32768, high = 60999;
  if (FILE* file = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(file, "%d %d", &low, &high) != 2) low = 32768, high = 60999;
    std::fclose(file);
  }
  static std::mt19937 random(std::random_device{}());
  constexpr int kFirstUnprivileged = 10000;  // clear of the well-known services
  if (low - ports > kFirstUnprivileged + 1000) {
    return std::uniform_int_distribution<int>(kFirstUnprivileged, low - ports)(random);
  }
  return std::uniform_int_distribution<int>(std::min(high + 1, 65535 - ports),
                                            65535 - ports)(random);
}

struct StartedServers {
  std::string base;  // HOST:PORT of the first server
  nlohmann::ordered_json listening = nlohmann::ordered_json::array();
  std::vector<std::unique_ptr<tuner::BenchServer>> servers;
};

// Starts every server of `flags` at `base` (ServerAddressFor's layout). On a
// failure the servers already started are shut down (by their destructors) and
// the error names the server.
Result<StartedServers> StartServers(const ServeFlags& flags,
                                    std::initializer_list<tuner::BenchTransport*> transports,
                                    const std::string& base) {
  StartedServers started;
  for (uint32_t i = 0; i < flags.servers; ++i) {
    for (tuner::BenchTransport* transport : transports) {
      std::string name(transport->name());
      if (flags.transport != "both" && flags.transport != name) continue;
      ARTUNE_ASSIGN_OR_RETURN(std::string address,
                              tuner::ServerAddressFor(name, base, static_cast<int>(i)));
      auto server = transport->StartServer(address);
      if (!server.ok()) {
        for (auto& running : started.servers) running->Shutdown();
        return server.status().WithContext(name + " server " + std::to_string(i));
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

Status Serve(const ServeFlags& flags) {
  // Block the stop signals before any server thread exists, so every thread
  // inherits the mask and sigwait below is the only place they are delivered.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  // Beyond loopback every server authenticates (credentials.h): make the token
  // file on first use, for the user to copy to the clients' hosts.
  const std::string host = flags.listen.substr(0, flags.listen.rfind(':'));
  const std::string token_path = transport::DefaultTokenPath();
  if (!transport::IsLoopbackHost(host) && !std::filesystem::exists(token_path)) {
    ARTUNE_RETURN_IF_ERROR(transport::CreateTokenFile(token_path).status());
    std::cerr << "artune serve: created the token file " << token_path
              << " (0600); clients need the same file: copy it to their hosts and point "
                 "ARTUNE_TOKEN_FILE at it\n";
  }
  ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                          transport::CredentialsFromEnvironment());
  auto artune = tuner::MakeArtuneBenchTransport(loaded.config);
  auto grpc = MakeGrpcServerTransport(flags.grpc_threads, loaded.config);

  // With port 0 a base port is picked (RandomBasePort) and the servers follow it.
  std::string base = flags.listen;
  const bool pick_port = PortOf(base) == "0";
  if (!pick_port) {  // checks the address, and that the last server's port exists
    ARTUNE_RETURN_IF_ERROR(
        tuner::ServerAddressFor("grpc", base, static_cast<int>(flags.servers) - 1).status());
  }
  // A random base port may be held by another server (gRPC's SO_REUSEPORT is off:
  // a taken port is refused, not shared). Then everything started is stopped and
  // another base is picked, a few times.
  Result<StartedServers> started = Status::Internal("no attempt");
  const std::string host_part = base.substr(0, base.rfind(':') + 1);
  for (int attempt = 0; attempt < (pick_port ? kPickPortAttempts : 1); ++attempt) {
    if (pick_port) {
      base = host_part + std::to_string(RandomBasePort(2 * static_cast<int>(flags.servers)));
    }
    started = StartServers(flags, {artune.get(), grpc.get()}, base);
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
                << (fabric.empty() ? "" : " (fabric " + fabric + ")")
                << (server.contains("data_endpoint")
                        ? ", data on " + std::string(server.at("data_endpoint"))
                        : "")
                << "\n";
    }
  }
  const nlohmann::ordered_json& listening = started->listening;
  std::vector<std::unique_ptr<tuner::BenchServer>>& servers = started->servers;
  nlohmann::ordered_json auth = {{"token", credentials.has_token()},
                                 {"token_file", credentials.token_source},
                                 {"tls", credentials.server_tls()}};
  if (flags.json) {
    std::cout
        << nlohmann::ordered_json{{"base", base}, {"servers", listening}, {"auth", auth}}.dump()
        << "\n";
  } else {
    std::cout << "artune serve: "
              << (credentials.has_token()
                      ? "clients must present the token in " + credentials.token_source
                      : std::string("no token: loopback clients only"))
              << (credentials.server_tls() ? ", control plane over TLS" : "") << "\n";
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
                   "gRPC server i on PORT+2i+1; port 0 picks a free base port below the ephemeral "
                   "range. Beyond "
                   "loopback every call must carry the token of the token file "
                   "(ARTUNE_TOKEN_FILE, else ~/.config/artune/token), created 0600 on first "
                   "use; TLS for the control plane with ARTUNE_TLS_CERT and ARTUNE_TLS_KEY")
      ->capture_default_str();
  command->add_option("--transport", flags->transport, "artune, grpc or both")
      ->check(CLI::IsMember({"artune", "grpc", "both"}))
      ->capture_default_str();
  command
      ->add_option("--servers", flags->servers,
                   "Servers per transport (bench --benchmark ps --servers N needs N)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  AddGrpcThreadsFlag(*command, flags->grpc_threads,
                     "Completion-queue threads per stock gRPC server");
  command->add_flag("--json", flags->json,
                    "Print the listening addresses as one JSON line instead of text");
  AddKnobFlags(*command, flags->knobs);
  command->footer(
      "Example: artune serve --listen 10.0.0.5:50051   (creates ~/.config/artune/token; copy "
      "it to the peer, then there: ARTUNE_TOKEN_FILE=token artune bench --peer 10.0.0.5:50051 "
      "--transport both)");
  command->callback(
      [flags, &context] { RunCommand(context, [&]() -> Status { return Serve(*flags); }); });
}

}  // namespace artune::cli
