// artune dashboard: watch the traffic, a sweep and a transport server live in the
// terminal (ncurses). Thin over artune_dashboard (cli/dashboard/).
//
// The probe flags are those of `artune probe` (--pcap/--ebpf/--exec and their
// options); the sweep comes from the store (--db), the transport counters from a
// server's control plane (--server).
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "command.h"
#include "dashboard.h"
#include "probe_flags.h"

namespace artune::cli {
namespace {

struct DashboardFlags {
  ProbeFlags probe;
  std::string server;
  double poll_s = 1;
  std::string sweep;
  std::string view;  // "" : home with no source given, else traffic
  std::string log = "/dev/null";
  bool no_colour = false;
};

Status RunDashboardCommand(const DashboardFlags& flags, const Context& context,
                           dashboard::DashboardResult& result) {
  dashboard::DashboardOptions options;
  ARTUNE_ASSIGN_OR_RETURN(options.probe, BackendFromFlags(flags.probe, "artune dashboard"));
  if (flags.probe.port != 0) options.server_port = flags.probe.port;
  options.server = flags.server;
  if (!(flags.poll_s >= 0.1 && flags.poll_s <= 60)) {
    return Status::InvalidArgument("--poll " + std::to_string(flags.poll_s) +
                                   " is out of range: give seconds in [0.1, 60]");
  }
  options.poll_interval = std::chrono::milliseconds(static_cast<int64_t>(flags.poll_s * 1000));
  if (!flags.sweep.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(options.sweep, dashboard::ParseSweepSelector(flags.sweep));
  }
  options.database_path = db::ResolveDatabasePath(context.globals.db_path);
  options.log_path = flags.log;
  options.colour = !flags.no_colour;
  // With no source named, open on the store: the home view, and the sweep view
  // following the newest sweep.
  const bool nothing_named = !options.probe && options.server.empty() && !options.sweep;
  if (nothing_named) options.sweep = dashboard::SweepSelector{};
  options.home = true;
  options.watch = true;
  options.initial_view = flags.view == "sweep"       ? dashboard::View::kSweep
                         : flags.view == "transport" ? dashboard::View::kTransport
                         : flags.view == "home"      ? dashboard::View::kHome
                         : flags.view == "watch"     ? dashboard::View::kWatch
                         : flags.view == "traffic"   ? dashboard::View::kTraffic
                         : nothing_named             ? dashboard::View::kHome
                                                     : dashboard::View::kTraffic;
  ARTUNE_ASSIGN_OR_RETURN(result, dashboard::RunDashboard(options));
  return Status::Ok();
}

}  // namespace

void RegisterDashboard(CLI::App& root, Context& context) {
  auto flags = std::make_shared<DashboardFlags>();
  auto* command = root.add_subcommand(
      "dashboard",
      "Live terminal dashboard: traffic per gRPC method (a probe it runs), a sweep's "
      "progress and heatmap (the store), a transport server's per-protocol counters, "
      "artune watch's decisions (the store)");
  AddProbeFlags(*command, flags->probe,
                "Probe CMD (after --) with an LD_PRELOAD interposer; no privileges; its output "
                "goes to --log");
  command->add_option("--server", flags->server,
                      "HOST:PORT of a running transport server's control plane (e.g. the "
                      "artune server of `artune serve`): its per-protocol counters");
  command->add_option("--poll", flags->poll_s, "Seconds between GetStats polls of --server")
      ->capture_default_str();
  command->add_option("--sweep", flags->sweep,
                      "A sweep of the store (--db) to show: its id, or 'latest' (follows new "
                      "sweeps); running sweeps update live");
  command
      ->add_option("--view", flags->view,
                   "The view shown first (default: home when no source is given, else traffic)")
      ->check(CLI::IsMember({"traffic", "sweep", "transport", "home", "watch"}));
  command
      ->add_option("--log", flags->log,
                   "Where stdout/stderr go while the dashboard owns the terminal (the --exec "
                   "command's output, gRPC logs)")
      ->capture_default_str();
  command->add_flag("--no-color", flags->no_colour,
                    "No colour (also when NO_COLOR is set or the terminal has none)");
  command->footer(
      "Keys: 1/t traffic, 2/s sweep, 3/x transport, 4/Home home, 5/w watch (artune watch's "
      "decisions), Tab next view, j/k method, "
      "? help, q quit.\n"
      "With no flags: the home view (the store's newest sweeps, captures and bench runs) and "
      "the sweep view following the newest sweep.\n"
      "Examples:\n"
      "  artune dashboard\n"
      "  artune dashboard --exec -- python train.py\n"
      "  artune dashboard --pcap --iface lo --port 50051 --server 127.0.0.1:50051\n"
      "  artune dashboard --sweep latest --view sweep\n"
      "Exit status: 0 after q; 128+N after signal N; with --exec and q after the command "
      "exited, the command's status.");
  command->callback([flags, &context] {
    dashboard::DashboardResult result;
    RunCommand(context, [&]() { return RunDashboardCommand(*flags, context, result); });
    if (context.exit_code != kExitOk) return;
    if (result.stop_signal != 0) {
      context.exit_code = 128 + result.stop_signal;
    } else if (result.command_exit_code) {
      context.exit_code = *result.command_exit_code;
    }
  });
}

}  // namespace artune::cli
