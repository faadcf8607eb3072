// artune probe: watch live gRPC traffic (or a saved capture), decode it and print
// the profile of its messages per method. Thin over artune_probes.
//
// Backend selection is one flag per backend (--pcap, --ebpf, --exec); each
// backend's own options sit beside it. With --exec, artune exits with the
// command's exit status.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "capture_record.h"
#include "command.h"

namespace artune::cli {
namespace {

struct ProbeOptions {
  bool pcap = false;
  bool ebpf = false;
  uint32_t pid = 0;
  std::string comm;
  bool decode = false;
  bool exec = false;
  std::vector<std::string> command;
  std::string interface;
  uint16_t port = 0;
  std::string filter;
  std::string read_file;
  double duration_s = 0;
  bool json = false;
  bool no_store = false;
};

std::atomic<bool> g_stop_requested{false};

extern "C" void OnInterrupt(int) { g_stop_requested.store(true); }

// Ctrl-C stops the capture cleanly (the profile is still printed); restored after.
class InterruptScope {
 public:
  InterruptScope() {
    g_stop_requested.store(false);
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

Result<probes::BackendOptions> SelectBackend(const ProbeOptions& options) {
  if (options.pcap + options.ebpf + options.exec != 1) {
    return Status::InvalidArgument(
        "artune probe: choose one backend: --pcap, --ebpf --pid PID|--comm NAME, or "
        "--exec -- CMD ARGS (see --help)");
  }
  probes::BackendOptions backend_options;
  if (options.pcap) {
    backend_options.kind = probes::BackendKind::kPcap;
    backend_options.pcap.interface = options.interface;
    backend_options.pcap.read_file = options.read_file;
    backend_options.pcap.filter = options.filter;
    if (options.port != 0) backend_options.pcap.port = options.port;
  } else if (options.ebpf) {
    backend_options.kind = probes::BackendKind::kEbpf;
    if (options.pid != 0) backend_options.ebpf.pid = options.pid;
    backend_options.ebpf.comm = options.comm;
    backend_options.ebpf.decode = options.decode;
  } else {
    if (options.command.empty()) {
      return Status::InvalidArgument(
          "--exec needs a command after --: artune probe --exec -- CMD ARGS");
    }
    backend_options.kind = probes::BackendKind::kPreload;
    backend_options.preload.command = options.command;
  }
  return backend_options;
}

// What the capture traced, for the store's `process` column: the pid or name for
// eBPF, the command line for --exec, nothing for pcap (it sees an interface).
std::string TracedProcess(const ProbeOptions& options) {
  if (options.ebpf) return options.pid != 0 ? std::to_string(options.pid) : options.comm;
  if (!options.exec) return "";
  std::string command_line;
  for (const std::string& word : options.command) {
    if (!command_line.empty()) command_line += ' ';
    command_line += word;
  }
  return command_line;
}

Result<int64_t> StoreCapture(const probes::Profile& profile, const ProbeOptions& options,
                             const Context& context,
                             std::chrono::system_clock::time_point started_at) {
  ARTUNE_ASSIGN_OR_RETURN(auto store,
                          db::Store::Open(db::ResolveDatabasePath(context.globals.db_path)));
  return store->InsertCapture(
      CaptureRecordFromProfile(profile, TracedProcess(options), started_at));
}

// `command_exit_code`: set to the --exec command's exit status.
Status RunProbe(const ProbeOptions& options, const Context& context,
                std::optional<int>& command_exit_code) {
  ARTUNE_ASSIGN_OR_RETURN(const probes::BackendOptions backend_options, SelectBackend(options));
  if (options.duration_s < 0) {
    return Status::InvalidArgument(
        "--duration " + std::to_string(options.duration_s) +
        " is negative: give seconds > 0, or omit it to run until Ctrl-C");
  }

  ARTUNE_ASSIGN_OR_RETURN(auto backend, probes::CreateCaptureBackend(backend_options));
  ARTUNE_RETURN_IF_ERROR(backend->Start());

  probes::SessionOptions session_options;
  if (options.port != 0) session_options.server_port = options.port;
  // The syscall backends see iovecs: attribute them to the methods whose frames
  // they carried (needs the bytes: ebpf --decode, preload by default).
  session_options.attribute_iovecs = backend->kind() != probes::BackendKind::kPcap;
  probes::ProbeSession session(session_options);

  InterruptScope interrupt_scope;
  probes::StopCondition stop;
  stop.stop_requested = &g_stop_requested;
  if (options.duration_s > 0) {
    stop.duration = std::chrono::milliseconds(static_cast<int64_t>(options.duration_s * 1000));
  }
  const bool progress = ShowProgress(context);
  const auto started = std::chrono::steady_clock::now();
  const auto started_at = std::chrono::system_clock::now();
  if (progress) {
    stop.on_tick = [&](const probes::BackendCounters& counters) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr,
                   "\r\033[K%.0f s  events %llu  lost %llu  stream %s  messages %llu  errors %llu",
                   elapsed, static_cast<unsigned long long>(counters.events_seen),
                   static_cast<unsigned long long>(counters.events_lost),
                   probes::FormatBytes(counters.bytes_seen).c_str(),
                   static_cast<unsigned long long>(session.messages()),
                   static_cast<unsigned long long>(session.errors().Total()));
    };
  }
  const Status run_status = backend->Run(session, stop);
  if (progress) std::fprintf(stderr, "\r\033[K");
  ARTUNE_RETURN_IF_ERROR(run_status);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  probes::Profile profile =
      session.Finish(probes::BackendKindName(backend->kind()), backend->counters(), elapsed);
  // Stored before printing so the output shows the id; a store failure still
  // prints the profile (the capture is not lost) and then fails the command.
  Status store_status = Status::Ok();
  if (!options.no_store) {
    Result<int64_t> id = StoreCapture(profile, options, context, started_at);
    if (id.ok()) {
      profile.capture_id = *id;
    } else {
      store_status =
          id.status().WithContext("the capture was not stored (--no-store skips storing)");
    }
  }
  if (options.json) {
    std::cout << probes::ProfileToJson(profile) << "\n";
  } else {
    std::cout << probes::FormatProfileTable(profile);
  }
  command_exit_code = backend->command_exit_code();
  return store_status;
}

}  // namespace

void RegisterProbe(CLI::App& root, Context& context) {
  auto options = std::make_shared<ProbeOptions>();
  auto* command = root.add_subcommand(
      "probe", "Capture gRPC traffic, decode HTTP/2 + gRPC, and print its message-size profile");
  auto* pcap = command->add_flag("--pcap", options->pcap,
                                 "Backend: libpcap (live interface or saved capture file)");
  auto* iface = command->add_option("--iface", options->interface,
                                    "pcap: capture live on this interface (e.g. lo)");
  auto* read = command
                   ->add_option("--read", options->read_file,
                                "pcap: read a saved pcap/pcapng file instead of capturing")
                   ->check(CLI::ExistingFile);
  auto* port = command
                   ->add_option("--port", options->port,
                                "pcap: the gRPC server's TCP port (filter \"tcp port N\")")
                   ->check(CLI::Range(1, 65535));
  auto* filter = command->add_option("--filter", options->filter,
                                     "pcap: a pcap filter expression instead of --port");
  iface->excludes(read);
  port->excludes(filter);
  for (auto* option : {iface, read, port, filter}) option->needs(pcap);
  auto* ebpf = command->add_flag(
      "--ebpf", options->ebpf,
      "Backend: eBPF syscall tracepoints of one process, exact iovec lists (root or "
      "CAP_BPF+CAP_PERFMON)");
  auto* pid = command->add_option("--pid", options->pid, "ebpf: trace this process")
                  ->check(CLI::Range(1u, 4194304u));
  auto* comm = command->add_option("--comm", options->comm,
                                   "ebpf: trace processes with this name (/proc/PID/comm)");
  auto* decode = command->add_flag(
      "--decode", options->decode,
      "ebpf: also copy the transferred bytes to decode HTTP/2 + gRPC messages (costs a copy "
      "of all traffic)");
  pid->excludes(comm);
  for (auto* option : {pid, comm, decode}) option->needs(ebpf);
  auto* exec = command->add_flag(
      "--exec", options->exec,
      "Backend: run CMD (after --) with an LD_PRELOAD interposer; no privileges; artune "
      "exits with CMD's status");
  command->add_option("command", options->command, "--exec: the command and its arguments")
      ->type_name("CMD ARGS");
  for (auto* flag : {pcap, ebpf}) flag->excludes(exec);
  pcap->excludes(ebpf);
  command
      ->add_option("--duration", options->duration_s,
                   "Stop after SEC seconds (default: until Ctrl-C or end of file)")
      ->type_name("SEC");
  command->add_flag("--json", options->json, "Print the profile as one JSON object");
  command->add_flag("--no-store", options->no_store,
                    "Do not record the capture in the store (--db); by default it is stored and "
                    "`artune captures` lists it");
  command->footer(
      "Examples:\n"
      "  artune probe --pcap --iface lo --port 50051 --duration 30\n"
      "  artune probe --pcap --read capture.pcapng --json\n"
      "  artune probe --ebpf --pid 4242 --decode --duration 30\n"
      "  artune probe --exec -- python train.py --ps_hosts=...\n"
      "Live capture needs root or CAP_NET_RAW+CAP_NET_ADMIN; --ebpf needs root or "
      "CAP_BPF+CAP_PERFMON and kernel BTF; --exec needs nothing (it finds "
      "libartune_preload.so via $ARTUNE_PRELOAD_LIBRARY, next to artune, or in "
      "<prefix>/lib/artune/).");
  command->callback([options, &context] {
    std::optional<int> command_exit_code;
    RunCommand(context, [&]() { return RunProbe(*options, context, command_exit_code); });
    // --exec: when the capture itself succeeded, artune exits with the command's status.
    if (context.exit_code == kExitOk && command_exit_code) context.exit_code = *command_exit_code;
  });
}

}  // namespace artune::cli
