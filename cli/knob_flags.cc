#include "knob_flags.h"

#include <iostream>

#include "artune/transport/knobs.h"

namespace artune::cli {

void AddKnobFlags(CLI::App& command, KnobFlags& flags) {
  command
      .add_option("--config", flags.config_path,
                  "Transport config file (TOML); default: $ARTUNE_CONFIG, else "
                  "$XDG_CONFIG_HOME/artune/transport.toml if it exists")
      ->type_name("FILE");
  std::string knob_names;
  for (const transport::Knob& knob : transport::Knobs()) {
    if (!knob_names.empty()) knob_names += ", ";
    knob_names += knob.name;
  }
  command
      .add_option("--set", flags.overrides,
                  "Override a knob, e.g. --set chunk_size=1MiB (repeatable; beats the file and "
                  "ARTUNE_* variables). Knobs: " +
                      knob_names)
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
}

transport::ConfigLoadOptions ToLoadOptions(const KnobFlags& flags) {
  transport::ConfigLoadOptions options;
  options.config_path = flags.config_path;
  options.overrides = flags.overrides;
  return options;
}

Result<transport::LoadedConfig> LoadConfigFromFlags(const KnobFlags& flags) {
  ARTUNE_ASSIGN_OR_RETURN(transport::LoadedConfig loaded, LoadConfig(ToLoadOptions(flags)));
  for (const std::string& warning : loaded.warnings) {
    std::cerr << "artune: warning: " << warning << "\n";
  }
  return loaded;
}

}  // namespace artune::cli
