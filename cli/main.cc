// artune: profile gRPC tensor traffic and tune the RDMA transport that carries it.
#include <iostream>

#include "artune/transport/transport.h"
#include "command.h"

namespace artune::cli {
// cli/relay_cmd.cc and cli/run_cmd.cc (issue 22); declared here rather than in
// command.h so that adding them rebuilds one file, not every subcommand.
void RegisterRelay(CLI::App& root, Context& context);
void RegisterRun(CLI::App& root, Context& context);
void RegisterModel(CLI::App& root, Context& context);    // model_cmd.cc
void RegisterPredict(CLI::App& root, Context& context);  // predict_cmd.cc
void RegisterWatch(CLI::App& root, Context& context);    // watch_cmd.cc
}  // namespace artune::cli

int main(int argc, char** argv) {
  using namespace artune::cli;
  // Servers, benchmarks and the probe hold many sockets: the soft limit of 1024
  // is far below what the administrator allows (transport.h). Failing to raise
  // it is not fatal: the servers refuse and pause past it instead of dying.
  (void)artune::transport::RaiseDescriptorLimit();
  Context context;
  CLI::App app{"artune: profile gRPC tensor traffic and tune the RDMA transport that carries it"};
  app.name("artune");
  // At most one; none is handled after parsing (the command list, not an error line).
  app.require_subcommand(0, 1);
  app.fallthrough();  // global options may follow the subcommand
  app.set_version_flag("--version", "artune 0.1.0");
  app.add_option("--db", context.globals.db_path,
                 "SQLite store (default: $XDG_DATA_HOME/artune/artune.db)");
  app.add_flag("-q,--quiet", context.globals.quiet, "No progress output");
  app.add_flag("-v,--verbose", context.globals.verbose, "More detail on stderr");
  app.footer(
      "Exit codes: 0 ok, 1 failure, 2 usage or config error, 3 validation failed "
      "(payload or input corrupt), 4 peer/device/capability unavailable.");

  // One line per subcommand file, in the order `artune --help` lists them.
  RegisterConfig(app, context);
  RegisterProbe(app, context);
  RegisterBench(app, context);
  RegisterSweep(app, context);
  RegisterModel(app, context);
  RegisterPredict(app, context);
  RegisterWatch(app, context);
  RegisterApply(app, context);
  RegisterWorkload(app, context);
  RegisterServe(app, context);
  RegisterRelay(app, context);
  RegisterRun(app, context);
  RegisterCompletions(app, context);
  RegisterResults(app, context);
  RegisterCaptures(app, context);
  RegisterReport(app, context);
  RegisterDb(app, context);
  RegisterDashboard(app, context);
  RegisterDevices(app, context);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "artune: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
  if (app.get_subcommands().empty()) {
    // Bare `artune` (or only global options): what `artune --help` prints, on
    // stdout, but with the usage exit code, as git and ip do (1 and 255): a script
    // that forgot the command must not read this as success.
    std::cout << app.help();
    return kExitUsage;
  }
  return context.exit_code;
}
