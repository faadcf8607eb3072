// artune config show | explain: the effective transport config (every knob with its
// value, source, range and doc) and which protocol serves each size range under it.
// Both are computed from the knob table and protocol.h, the same code the transport
// runs, so what is printed is what the transport does.
#include <iostream>
#include <memory>
#include <string>

#include "artune/report/config_text.h"
#include "artune/transport/config_loader.h"
#include "artune/tuner/config_emit.h"
#include "command.h"
#include "knob_flags.h"

namespace artune::cli {
namespace {

using transport::LoadedConfig;

struct ConfigOptions {
  KnobFlags knobs;
  bool json = false;
};

Status Show(const ConfigOptions& options) {
  ARTUNE_ASSIGN_OR_RETURN(const LoadedConfig loaded, LoadConfigFromFlags(options.knobs));
  if (options.json) {
    std::cout << tuner::LoadedConfigJson(loaded).dump(2) << "\n";
  } else {
    report::PrintConfigShow(loaded, std::cout);
  }
  return Status::Ok();
}

Status Explain(const ConfigOptions& options) {
  ARTUNE_ASSIGN_OR_RETURN(const LoadedConfig loaded, LoadConfigFromFlags(options.knobs));
  if (options.json) {
    std::cout << tuner::ConfigExplainJson(loaded.config).dump(2) << "\n";
  } else {
    report::PrintConfigExplain(loaded.config, std::cout);
  }
  return Status::Ok();
}

CLI::App* AddConfigSubcommand(CLI::App& parent, Context& context, const std::string& name,
                              const std::string& description,
                              Status (*body)(const ConfigOptions&)) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* command = parent.add_subcommand(name, description);
  AddKnobFlags(*command, options->knobs);
  command->add_flag("--json", options->json, "Print one JSON document instead of a table");
  command->callback(
      [&context, options, body] { RunCommand(context, [&] { return body(*options); }); });
  return command;
}

}  // namespace

void RegisterConfig(CLI::App& root, Context& context) {
  CLI::App* config =
      root.add_subcommand("config", "Show the embedded transport's effective config and protocols");
  config->require_subcommand(1);
  config->footer(
      "Values come from, in increasing precedence: defaults, the config file (--config, "
      "$ARTUNE_CONFIG or $XDG_CONFIG_HOME/artune/transport.toml), ARTUNE_<KNOB> environment "
      "variables, --set NAME=VALUE. A bad value exits with code 2.");
  AddConfigSubcommand(*config, context, "show",
                      "Every knob: value, unit, source (default, file, env, flag), allowed "
                      "range and doc",
                      &Show);
  AddConfigSubcommand(*config, context, "explain",
                      "Which protocol serves each slice size range under the effective config",
                      &Explain);
}

}  // namespace artune::cli
