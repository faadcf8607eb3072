// artune relay: the per-host relay that carries `artune run` programs' connections
// to the servers of this host over the embedded transport, until SIGINT/SIGTERM.
// Thin over transport/relay/relay.h.
#include <signal.h>

#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/transport/credentials.h"
#include "command.h"
#include "knob_flags.h"
#include "relay/relay.h"
#include "relay/relay_wire.h"
#include "server_flags.h"

namespace artune::cli {
namespace {

struct RelayFlags {
  KnobFlags knobs;
  std::string listen = "127.0.0.1:" + std::to_string(relay::kDefaultRelayPort);
  bool json = false;
};

Status RunRelay(const RelayFlags& flags) {
  const sigset_t stop_signals = BlockStopSignals();
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_RETURN_IF_ERROR(CreateTokenFileBeyondLoopback(
      flags.listen, "artune relay",
      "the other hosts' relays and `artune run` need the same file: copy it there and point "
      "ARTUNE_TOKEN_FILE at it"));
  relay::RelayOptions options;
  options.config = loaded.config;
  ARTUNE_ASSIGN_OR_RETURN(options.credentials, transport::CredentialsFromEnvironment());
  options.listen = flags.listen;
  options.log = [](const std::string& line) { std::cerr << "artune " << line << "\n"; };
  const bool token = options.credentials.has_token();
  const std::string token_source = options.credentials.token_source;
  ARTUNE_ASSIGN_OR_RETURN(auto relay, relay::Relay::Start(std::move(options)));
  if (flags.json) {
    std::cout << nlohmann::ordered_json{{"address", relay->address()},
                                        {"fabric", relay->fabric()},
                                        {"auth", {{"token", token}, {"token_file", token_source}}}}
                     .dump()
              << "\n";
  } else {
    std::cout << "artune relay: listening on " << relay->address() << " (fabric " << relay->fabric()
              << "), "
              << (token ? "peers must present the token in " + token_source
                        : std::string("no token: loopback peers only"))
              << "\nartune relay: ready; on a client host: artune run -- CMD ARGS (Ctrl-C stops)\n";
  }
  std::cout.flush();
  int received = 0;
  sigwait(&stop_signals, &received);
  const relay::RelayCounters counters = relay->counters();
  relay->Shutdown();
  if (flags.json) {
    std::cout << nlohmann::ordered_json{{"stopped", strsignal(received)},
                                        {"connections", counters.connections},
                                        {"bytes", counters.bytes},
                                        {"waited_bytes", counters.queued_bytes},
                                        {"copied_bytes", counters.copied_bytes}}
                     .dump()
              << "\n";
  } else {
    std::cout << "artune relay: " << strsignal(received) << ", stopped after carrying "
              << counters.connections << " connection(s), " << counters.bytes << " bytes\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterRelay(CLI::App& root, Context& context) {
  auto flags = std::make_shared<RelayFlags>();
  auto* command = root.add_subcommand(
      "relay",
      "Carry `artune run` programs' TCP connections to the servers of this host over the "
      "embedded transport (one relay per host), until SIGINT/SIGTERM");
  command
      ->add_option("--listen", flags->listen,
                   "HOST:PORT of the relay's transport server (fabric auto: shm to relays of "
                   "this host, verbs where a device is active, else tcp). Beyond loopback every "
                   "peer must carry the token of the token file (ARTUNE_TOKEN_FILE, else "
                   "~/.config/artune/token), created 0600 on first use")
      ->check(HostPortValidator())
      ->capture_default_str();
  command->add_flag("--json", flags->json,
                    "Print the listening address as one JSON line, and at exit one with what "
                    "was carried");
  AddKnobFlags(*command, flags->knobs);
  command->footer(
      "A relay dials only addresses of its own host (the address the program dialled).\n"
      "Example: artune relay --listen 10.0.0.5:50061   (then on 10.0.0.6, with the same token "
      "file: artune run -- ./trainer --ps 10.0.0.5:2222)");
  command->callback(
      [flags, &context] { RunCommand(context, [&]() -> Status { return RunRelay(*flags); }); });
}

}  // namespace artune::cli
