// artune run: runs a command unchanged with its TCP connections to hosts where an
// `artune relay` answers carried over the embedded transport (transport/relay/relay.h),
// and writes what was carried. The command's exit code is artune run's.
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/transport/credentials.h"
#include "command.h"
#include "knob_flags.h"
#include "relay/redirect_protocol.h"
#include "relay/relay.h"
#include "relay/relay_wire.h"

extern char** environ;

namespace artune::cli {
namespace {

constexpr const char* kRedirectLibraryName = "libartune_relay_redirect.so";

struct RunFlags {
  KnobFlags knobs;
  uint16_t relay_port = relay::kDefaultRelayPort;
  std::string output;
  std::vector<std::string> command;
};

std::atomic<pid_t> child_pid{0};

// SIGINT/SIGTERM go to the command, which decides; artune run waits for it.
void ForwardSignal(int signal) {
  const pid_t pid = child_pid.load();
  if (pid > 0) kill(pid, signal);
}

Result<std::string> FindRedirectLibrary() {
  std::vector<std::filesystem::path> candidates;
  if (const char* path = std::getenv("ARTUNE_RELAY_REDIRECT_LIBRARY"); path && path[0] != '\0') {
    candidates.emplace_back(path);
  }
  std::error_code error;
  const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    candidates.push_back(executable.parent_path() / kRedirectLibraryName);
    candidates.push_back(executable.parent_path().parent_path() / "lib" / "artune" /
                         kRedirectLibraryName);
  }
#ifdef ARTUNE_RELAY_REDIRECT_BUILD_PATH
  candidates.emplace_back(ARTUNE_RELAY_REDIRECT_BUILD_PATH);
#endif
  std::string tried;
  for (const auto& candidate : candidates) {
    if (access(candidate.c_str(), R_OK) == 0) return std::filesystem::absolute(candidate).string();
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  return Status::NotFound(std::string(kRedirectLibraryName) + " not found (tried: " + tried +
                          "): build the artune_relay_redirect target, or point "
                          "ARTUNE_RELAY_REDIRECT_LIBRARY at the library");
}

// The command's exit code: its own, or 128 + the signal that ended it (as a shell).
Result<int> SpawnAndWait(const std::vector<std::string>& command, const std::string& library,
                         const std::string& socket_path) {
  std::vector<std::string> environment;
  std::string preload = library;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if (variable.starts_with("LD_PRELOAD=")) {
      if (variable.size() > 11) preload += ":" + std::string(variable.substr(11));
    } else if (!variable.starts_with(std::string(relay::kRedirectSocketEnv) + "=")) {
      environment.emplace_back(variable);
    }
  }
  environment.push_back("LD_PRELOAD=" + preload);
  environment.push_back(std::string(relay::kRedirectSocketEnv) + "=" + socket_path);
  std::vector<char*> argv, envp;
  for (const std::string& argument : command) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);

  struct sigaction forward {};
  forward.sa_handler = ForwardSignal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (error != 0) {
    return Status::NotFound("cannot run " + command[0] + ": " + std::strerror(error));
  }
  child_pid.store(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::FromErrno("waiting for " + command[0], errno);
  }
  child_pid.store(0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

nlohmann::ordered_json CarriedJson(const relay::RelayCounters& counters) {
  static constexpr const char* kNames[] = {"eager", "coalesced", "rendezvous", "chunked"};
  nlohmann::ordered_json by_protocol = nlohmann::ordered_json::object();
  for (int p = 0; p < transport::kProtocolCount; ++p) {
    by_protocol[kNames[p]] = {{"slices", counters.by_protocol[p].slices},
                              {"bytes", counters.by_protocol[p].bytes}};
  }
  return {{"carried",
           {{"connections", counters.connections},
            {"bytes", counters.bytes},
            {"by_protocol", by_protocol}}}};
}

Status Run(const RunFlags& flags, int& exit_code) {
  if (flags.command.empty()) {
    return Status::InvalidArgument("artune run needs a command: artune run -- CMD ARGS");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
  ARTUNE_ASSIGN_OR_RETURN(const std::string library, FindRedirectLibrary());
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
  Result<int> code = SpawnAndWait(flags.command, library, socket_path);
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
  command->add_option("--output", flags->output,
                      "At exit, write what was carried as JSON: {\"carried\": {\"connections\", "
                      "\"bytes\", \"by_protocol\": {eager|coalesced|rendezvous|chunked: "
                      "{slices, bytes}}}}");
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
