// artune run: runs a command unchanged with its TCP connections to hosts where an
// `artune relay` answers carried over the embedded transport (transport/relay/relay.h),
// and writes what was carried. The command's exit code is artune run's.
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/transport/credentials.h"
#include "command.h"
#include "knob_flags.h"
#include "relay/redirect_launch.h"
#include "relay/relay.h"
#include "relay/relay_wire.h"

namespace artune::cli {
namespace {

struct RunFlags {
  KnobFlags knobs;
  uint16_t relay_port = relay::kDefaultRelayPort;
  std::string output;
  std::vector<std::string> command;
};

nlohmann::ordered_json CarriedJson(const relay::RelayCounters& counters) {
  static constexpr const char* kNames[] = {"eager", "coalesced", "rendezvous", "chunked"};
  nlohmann::ordered_json by_protocol = nlohmann::ordered_json::object();
  for (int p = 0; p < transport::kProtocolCount; ++p) {
    by_protocol[kNames[p]] = {{"slices", counters.by_protocol[p].slices},
                              {"bytes", counters.by_protocol[p].bytes}};
  }
  // waited: stream bytes this side's relay could not hand to the program's socket
  // at once (the program read slowly), and of those the bytes it copied to wait
  // (past its held-memory limit) rather than keeping the transport's memory.
  return {{"carried",
           {{"connections", counters.connections},
            {"bytes", counters.bytes},
            {"by_protocol", by_protocol},
            {"waited", {{"bytes", counters.queued_bytes}, {"copied", counters.copied_bytes}}}}}};
}

Status Run(const RunFlags& flags, int& exit_code) {
  if (flags.command.empty()) {
    return Status::InvalidArgument("artune run needs a command: artune run -- CMD ARGS");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_ASSIGN_OR_RETURN(const std::string library, relay::FindRedirectLibrary());
  // The interposer's socket lives in a directory only this user can enter.
  std::string directory = (std::filesystem::temp_directory_path() / "artune-run-XXXXXX").string();
  if (mkdtemp(directory.data()) == nullptr) {
    return Status::FromErrno("creating a private directory for artune run", errno);
  }
  const std::string socket_path = directory + "/relay.sock";
  relay::RelayOptions options;
  options.config = loaded.config;
  ARTUNE_ASSIGN_OR_RETURN(options.credentials, transport::CredentialsFromEnvironment());
  options.relay_port = flags.relay_port;
  options.control_socket = socket_path;
  options.log = [](const std::string& line) { std::cerr << "artune run: " << line << "\n"; };
  auto started = relay::Relay::Start(std::move(options));
  if (!started.ok()) {
    std::filesystem::remove_all(directory);
    return started.status();
  }
  std::unique_ptr<relay::Relay> relay = std::move(*started);
  Result<int> code = relay::RunRedirected(flags.command, library, socket_path);
  const relay::RelayCounters counters = relay->counters();
  relay->Shutdown();
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  if (!code.ok()) return code.status();
  exit_code = *code;
  if (!flags.output.empty()) {
    std::ofstream out(flags.output);
    out << CarriedJson(counters).dump(2) << "\n";
    if (!out) return Status::IoError("cannot write " + flags.output);
  }
  return Status::Ok();
}

}  // namespace

void RegisterRun(CLI::App& root, Context& context) {
  auto flags = std::make_shared<RunFlags>();
  auto* command = root.add_subcommand(
      "run",
      "Run a command unchanged with its TCP connections to hosts where `artune relay` answers "
      "carried by the embedded transport (gRPC messages by the config's protocols)");
  command
      ->add_option("--relay-port", flags->relay_port,
                   "Port where the relays listen on the hosts the command dials; a host "
                   "without a relay there is dialled directly")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  command->add_option(
      "--output", flags->output,
      "At exit, write what was carried as JSON: {\"carried\": {\"connections\", "
      "\"bytes\", \"by_protocol\": {eager|coalesced|rendezvous|chunked: "
      "{slices, bytes}}, \"waited\": {bytes, copied}}}: waited counts the bytes the "
      "program did not read at once, and copied those of them the relay copied "
      "to hold");
  command->add_option("command", flags->command, "The command and its arguments, after --")
      ->type_name("CMD ARGS")
      ->required();
  AddKnobFlags(*command, flags->knobs);
  command->footer(
      "The exit code is the command's own (128+N when signal N ended it). Beyond loopback "
      "the relays want the token file (ARTUNE_TOKEN_FILE, as for artune serve).\n"
      "Which protocol a carried message takes is the knobs' of the relay beside the server, "
      "in both directions (tune it with artune apply config --live RELAY); here the knob "
      "flags set only what is fixed when a transport starts (fabric, verbs_*).\n"
      "Examples:\n"
      "  artune relay &   artune run --output carried.json -- artune workload --steps 3\n"
      "  artune run -- python3 client.py --server 10.0.0.5:50051");
  command->callback([flags, &context] {
    int exit_code = 0;
    RunCommand(context, [&]() -> Status { return Run(*flags, exit_code); });
    if (context.exit_code == kExitOk) context.exit_code = exit_code;
  });
}

}  // namespace artune::cli
