// The two options every subcommand that runs or shows the transport takes:
//   --config FILE        a TOML config file (must exist); default: $ARTUNE_CONFIG or
//                        $XDG_CONFIG_HOME/artune/transport.toml when present
//   --set NAME=VALUE     override one knob (repeatable; applied last, in order)
// Usage (bench, serve, config):
//   auto flags = std::make_shared<KnobFlags>();
//   AddKnobFlags(*command, *flags);
//   ... in the callback: ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(*flags));
// Bad values come back as kInvalidArgument, which RunCommand maps to exit code 2.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config_loader.h"

namespace artune::cli {

struct KnobFlags {
  std::string config_path;             // --config; empty: the default path
  std::vector<std::string> overrides;  // --set, in command-line order
};

// Adds --config and --set to `command`. `flags` is written while the command line is
// parsed, so it must outlive the parse (hold it in a shared_ptr captured by the
// callback, as the subcommand files do).
void AddKnobFlags(CLI::App& command, KnobFlags& flags);

// The loader options these flags stand for (process environment, default path).
transport::ConfigLoadOptions ToLoadOptions(const KnobFlags& flags);

// LoadConfig(ToLoadOptions(flags)); the loader's warnings (e.g. a misspelt ARTUNE_*
// variable) are printed to stderr as "artune: warning: ...".
Result<transport::LoadedConfig> LoadConfigFromFlags(const KnobFlags& flags);

}  // namespace artune::cli
