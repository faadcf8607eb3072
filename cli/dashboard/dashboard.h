// `artune dashboard`: starts the configured sources, owns the terminal and runs
// the draw/key loop until q or a stop signal.
//
// The loop redraws at most `max_redraws_per_s` times a second for new data, and
// once after each batch of keys or a resize; sources run on their own threads
// (probe, transport poller) or are polled once a second (the sweep store).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "artune/probes/backend.h"
#include "artune/status.h"
#include "sweep_source.h"

namespace artune::dashboard {

struct DashboardOptions {
  std::optional<probes::BackendOptions> probe;
  std::optional<uint16_t> server_port;  // the probed gRPC server's port, when known
  std::string server;                   // transport control-plane address; "" for none
  std::chrono::milliseconds poll_interval{1000};
  std::optional<SweepSelector> sweep;
  bool home = false;          // read the store's newest records for the home view
  bool watch = false;         // read the store's watch decisions for the watch view
  std::string database_path;  // the store, for the sweep view
  std::string log_path;       // fd 1 and 2 while the dashboard runs (and --exec's output)
  bool colour = true;         // false: monochrome even where colour is available
  int max_redraws_per_s = 10;
  View initial_view = View::kTraffic;
};

struct DashboardResult {
  int stop_signal = 0;                   // SIGINT/SIGTERM/SIGHUP that ended it, or 0 (q)
  std::optional<int> command_exit_code;  // --exec: the command's status, when it exited
};

// Errors: those of the sources' start (probes' CaptureBackend::Start) and of the
// terminal (not a terminal, unknown TERM). The terminal is restored before return.
Result<DashboardResult> RunDashboard(const DashboardOptions& options);

}  // namespace artune::dashboard
