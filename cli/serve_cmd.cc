// artune serve: hosts the benchmark servers of both transports for a remote
// `artune bench --peer`, until SIGINT or SIGTERM.
//
// Port layout (the same rule ServerAddressFor gives bench): with --listen HOST:PORT,
// server i of the embedded transport listens on PORT+2i (its gRPC control plane;
// the fabric picks its own data port during the handshake) and the stock gRPC
// server i on PORT+2i+1. Loopback unless --listen names another address; then
// authenticated (transport/credentials.h). On loopback without a token, the
// embedded transport serves this user and root only.
#include <signal.h>

#include <cstring>
#include <initializer_list>
#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/transport/credentials.h"
#include "artune/tuner/bench_servers.h"
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

Status Serve(const ServeFlags& flags) {
  const sigset_t stop_signals = BlockStopSignals();
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_RETURN_IF_ERROR(CreateTokenFileBeyondLoopback(
      flags.listen, "artune serve",
      "clients need the same file: copy it to their hosts and point ARTUNE_TOKEN_FILE at it"));
  ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                          transport::CredentialsFromEnvironment());
  auto artune = tuner::MakeArtuneBenchTransport(loaded.config);
  auto grpc = tuner::MakeGrpcServerTransport(flags.grpc_threads, loaded.config);

  ARTUNE_ASSIGN_OR_RETURN(tuner::StartedServers started,
                          tuner::StartBenchServers({artune.get(), grpc.get()}, flags.transport,
                                                   flags.servers, flags.listen));
  std::string base = started.base;
  if (!flags.json) {
    for (const auto& server : started.listening) {
      const std::string fabric = server.at("fabric");
      std::cout << "artune serve: " << std::string(server.at("transport")) << " server "
                << server.at("server").get<uint32_t>() << " on "
                << std::string(server.at("address"))
                << (fabric.empty() ? "" : " (fabric " + fabric + ")")
                << (server.contains("data_endpoint")
                        ? ", data on " + std::string(server.at("data_endpoint"))
                        : "")
                << (server.contains("local_endpoint")
                        ? ", same-host shm on " + std::string(server.at("local_endpoint"))
                        : "")
                << "\n";
    }
  }
  const nlohmann::ordered_json& listening = started.listening;
  std::vector<std::unique_ptr<tuner::BenchServer>>& servers = started.servers;
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
                      : std::string("no token: loopback clients of this user (and root) only"))
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
                   "range. On loopback without a token, the embedded transport serves this "
                   "user (and root) only. Beyond "
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
