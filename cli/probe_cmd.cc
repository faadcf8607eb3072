// artune probe: watch live gRPC traffic (or a saved capture), decode it and print
// the profile of its messages per method. Thin over artune_probes.
//
// Backend selection is one flag per backend (--pcap today); each backend's own
// options sit beside it, so --ebpf --pid PID and --exec -- CMD can join later.
#include <csignal>
#include <cstdio>
#include <iostream>

#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "command.h"

namespace artune::cli {
namespace {

struct ProbeOptions {
  bool pcap = false;
  std::string interface;
  uint16_t port = 0;
  std::string filter;
  std::string read_file;
  double duration_s = 0;
  bool json = false;
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

Status RunProbe(const ProbeOptions& options, const Context& context) {
  if (!options.pcap) {
    return Status::InvalidArgument("artune probe: choose a backend: --pcap (see --help)");
  }
  probes::BackendOptions backend_options;
  backend_options.kind = probes::BackendKind::kPcap;
  backend_options.pcap.interface = options.interface;
  backend_options.pcap.read_file = options.read_file;
  backend_options.pcap.filter = options.filter;
  if (options.port != 0) backend_options.pcap.port = options.port;
  if (options.duration_s < 0) {
    return Status::InvalidArgument(
        "--duration " + std::to_string(options.duration_s) +
        " is negative: give seconds > 0, or omit it to run until Ctrl-C");
  }

  ARTUNE_ASSIGN_OR_RETURN(auto backend, probes::CreateCaptureBackend(backend_options));
  ARTUNE_RETURN_IF_ERROR(backend->Start());

  probes::SessionOptions session_options;
  if (options.port != 0) session_options.server_port = options.port;
  probes::ProbeSession session(session_options);

  InterruptScope interrupt_scope;
  probes::StopCondition stop;
  stop.stop_requested = &g_stop_requested;
  if (options.duration_s > 0) {
    stop.duration = std::chrono::milliseconds(static_cast<int64_t>(options.duration_s * 1000));
  }
  const bool progress = ShowProgress(context);
  const auto started = std::chrono::steady_clock::now();
  if (progress) {
    stop.on_tick = [&](const probes::BackendCounters& counters) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr,
                   "\r\033[K%.0f s  packets %llu  lost %llu  stream %s  messages %llu  errors %llu",
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

  const probes::Profile profile =
      session.Finish(probes::BackendKindName(backend->kind()), backend->counters(), elapsed);
  if (options.json) {
    std::cout << probes::ProfileToJson(profile) << "\n";
  } else {
    std::cout << probes::FormatProfileTable(profile);
  }
  return Status::Ok();
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
  command
      ->add_option("--duration", options->duration_s,
                   "Stop after SEC seconds (default: until Ctrl-C or end of file)")
      ->type_name("SEC");
  command->add_flag("--json", options->json, "Print the profile as one JSON object");
  command->footer(
      "Examples:\n"
      "  artune probe --pcap --iface lo --port 50051 --duration 30\n"
      "  artune probe --pcap --read capture.pcapng --json\n"
      "Live capture needs root or CAP_NET_RAW+CAP_NET_ADMIN.");
  command->callback(
      [options, &context] { RunCommand(context, [&]() { return RunProbe(*options, context); }); });
}

}  // namespace artune::cli
