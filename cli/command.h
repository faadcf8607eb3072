// What every subcommand file shares: global options, exit codes, and the one place
// that turns a Status into a message on stderr and an exit code.
//
// Each subcommand lives in its own file and exposes one Register* function that
// adds its CLI11 subcommand to the root app; main.cc calls them in order.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "artune/db/store.h"
#include "artune/status.h"

namespace artune::cli {

// Documented in `artune --help` and README.md.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      // the command failed at run time (message on stderr)
  kExitUsage = 2,        // bad command line or bad config value
  kExitValidation = 3,   // data failed validation (payload checksum, corrupt input)
  kExitUnavailable = 4,  // a peer, device or capability is missing
};

struct GlobalOptions {
  std::string db_path;  // empty: the store's default path (XDG data directory)
  bool quiet = false;   // no progress output
  bool verbose = false;
};

struct Context {
  GlobalOptions globals;
  int exit_code = kExitOk;
};

int ExitCodeFor(const Status& status);

// Runs a subcommand body; an error is printed once as "artune: <message>" and
// mapped to the exit code.
void RunCommand(Context& context, const std::function<Status()>& body);

// Opens the store named by --db (or the default path) for a reading command: never
// creates a database; a missing file is an error that says how to make one.
Result<std::unique_ptr<db::Store>> OpenStoreForReading(const Context& context);

// Whether progress lines should be drawn on stderr (a terminal, and not --quiet).
bool ShowProgress(const Context& context);

// For options naming a server (--peer, --live): HOST:PORT, never empty, so that a
// script passing an unset variable is told so instead of silently measuring a
// loopback server of its own.
const CLI::Validator& HostPortValidator();

// One declaration per subcommand file (defined in cli/<name>_cmd.cc).
void RegisterCompletions(CLI::App& root, Context& context);
void RegisterBench(CLI::App& root, Context& context);
void RegisterSweep(CLI::App& root, Context& context);
void RegisterServe(CLI::App& root, Context& context);
void RegisterResults(CLI::App& root, Context& context);
void RegisterCaptures(CLI::App& root, Context& context);
void RegisterDb(CLI::App& root, Context& context);
void RegisterProbe(CLI::App& root, Context& context);
void RegisterConfig(CLI::App& root, Context& context);
void RegisterApply(CLI::App& root, Context& context);
void RegisterWorkload(CLI::App& root, Context& context);
void RegisterDashboard(CLI::App& root, Context& context);
void RegisterReport(CLI::App& root, Context& context);
void RegisterDevices(CLI::App& root, Context& context);

}  // namespace artune::cli
