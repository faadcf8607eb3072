// artune probe: watch live gRPC traffic (or a saved capture), decode it and print
// the profile of its messages per method. Thin over artune_probes.
//
// Backend selection is one flag per backend (--pcap, --ebpf, --exec); each
// backend's own options sit beside it. With --exec, artune exits with the
// command's exit status.
#include <csignal>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "artune/tuner/capture_record.h"
#include "command.h"
#include "probe_flags.h"
#include "progress.h"

namespace artune::cli {
namespace {

struct ProbeOptions {
  ProbeFlags backend;
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

Result<int64_t> StoreCapture(const probes::Profile& profile, const ProbeOptions& options,
                             const Context& context,
                             std::chrono::system_clock::time_point started_at) {
  ARTUNE_ASSIGN_OR_RETURN(auto store,
                          db::Store::Open(db::ResolveDatabasePath(context.globals.db_path)));
  return store->InsertCapture(
      tuner::CaptureRecordFromProfile(profile, TracedProcess(options.backend), started_at));
}

// `command_exit_code`: set to the --exec command's exit status.
Status RunProbe(const ProbeOptions& options, const Context& context,
                std::optional<int>& command_exit_code) {
  ARTUNE_ASSIGN_OR_RETURN(const std::optional<probes::BackendOptions> backend_options,
                          BackendFromFlags(options.backend, "artune probe"));
  if (!backend_options) {
    return Status::InvalidArgument(
        "artune probe: choose one backend: --pcap, --ebpf --pid PID|--comm NAME, or "
        "--exec -- CMD ARGS (see --help)");
  }
  if (options.duration_s < 0) {
    return Status::InvalidArgument(
        "--duration " + std::to_string(options.duration_s) +
        " is negative: give seconds > 0, or omit it to run until Ctrl-C");
  }

  probes::BackendOptions chosen = *backend_options;
  // With --json, stdout is the JSON object alone: the traced command writes to
  // our stderr instead.
  chosen.preload.command_stdout_to_stderr = options.json;
  ARTUNE_ASSIGN_OR_RETURN(auto backend, probes::CreateCaptureBackend(chosen));
  ARTUNE_RETURN_IF_ERROR(backend->Start());

  probes::SessionOptions session_options;
  if (options.backend.port != 0) session_options.server_port = options.backend.port;
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
  ProgressLine progress(context);
  const auto started = std::chrono::steady_clock::now();
  const auto started_at = std::chrono::system_clock::now();
  if (progress.drawing()) {
    stop.on_tick = [&](const probes::BackendCounters& counters) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      progress.Update(FormatDuration(elapsed) + "  events " + std::to_string(counters.events_seen) +
                      "  lost " + std::to_string(counters.events_lost) + "  stream " +
                      probes::FormatBytes(counters.bytes_seen) + "  messages " +
                      std::to_string(session.messages()) + "  errors " +
                      std::to_string(session.errors().Total()));
    };
  }
  const Status run_status = backend->Run(session, stop);
  progress.Clear();
  // A corrupt source (a scribbled ring, a damaged capture file) still gives the
  // profile of what was read before it; the error is the exit status (3) after.
  if (!run_status.ok() && run_status.code() != ErrorCode::kCorruption) return run_status;
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
  if (!run_status.ok()) return run_status;
  return store_status;
}

}  // namespace

void RegisterProbe(CLI::App& root, Context& context) {
  auto options = std::make_shared<ProbeOptions>();
  auto* command = root.add_subcommand(
      "probe", "Capture gRPC traffic, decode HTTP/2 + gRPC, and print its message-size profile");
  AddProbeFlags(*command, options->backend,
                "Backend: run CMD (after --) with an LD_PRELOAD interposer; no privileges; "
                "artune exits with CMD's status");
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
