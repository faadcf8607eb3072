// Loading the transport's Config: defaults, then a TOML file, then ARTUNE_<KNOB>
// environment variables, then NAME=VALUE overrides (the CLI's --set), each layer
// overriding the one before. Records where every knob's value came from, for
// `artune config show` and for the store.
//
// File format: flat TOML, one key per knob (names from knobs.h). Sizes may be
// integers (bytes) or strings with units ("16KiB"); counts and durations integers
// or strings ("10s"); enums strings. ToToml (knobs.h) writes this format.
//
// Threading: LoadConfig is safe to call from any thread when `environment` is given;
// with the process environment it reads environ and must not race with setenv.
//
// Errors (all kInvalidArgument unless stated; nothing is partially applied, the
// caller fixes the input and retries):
//   explicit file missing        names the path (--config or $ARTUNE_CONFIG)
//   file unreadable              kIoError, names the path and errno text
//   TOML syntax error            names path:line:column and the parser's message
//   unknown key                  names path:line, the key, and the nearest knob
//   wrong type (bool, float...)  names path:line, the key, the TOML type, what is allowed
//   bad or out-of-range value    names path:line (or the variable, or --set), the
//                                key, the value and the allowed range or choices
//   cross-knob rule broken       ValidateConfig's message
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config.h"

namespace artune::transport {

using Environment = std::map<std::string, std::string>;

// Where one knob's effective value came from.
struct KnobSource {
  enum class Kind { kDefault, kFile, kEnvironment, kFlag };
  Kind kind = Kind::kDefault;
  // kFile: "path:line"; kEnvironment: the variable name; kFlag: "--set NAME=VALUE";
  // kDefault: "".
  std::string location;

  // "default", "file /etc/x.toml:3", "env ARTUNE_CHUNK_SIZE", "flag --set chunk_size=1MiB".
  std::string ToString() const;
  // "default", "file", "env", "flag".
  std::string_view KindName() const;
};

struct ConfigLoadOptions {
  // A file that must exist. Empty: DefaultConfigPath(environment), which may be
  // missing (then only defaults, environment and overrides apply).
  std::string config_path;
  // False: no file at all unless config_path is set (tests, embedded callers that
  // must not pick up a user's file).
  bool use_default_path = true;
  // "NAME=VALUE" (NAME is the knob name), applied last, in order.
  std::vector<std::string> overrides;
  // Variables to read ARTUNE_* and the default path from; nullopt: the process
  // environment.
  std::optional<Environment> environment;
};

struct LoadedConfig {
  Config config;
  // One per knob, in the order of Knobs() (knobs.h).
  std::vector<KnobSource> sources;
  // The file that was read; empty when none was.
  std::string file_path;
  // Non-fatal findings, e.g. an ARTUNE_* variable that is not a knob (a likely typo).
  std::vector<std::string> warnings;

  // The source of the named knob; a default source for an unknown name.
  const KnobSource& SourceOf(std::string_view knob_name) const;
};

// Variables that start with ARTUNE_ but are not knobs, and so are never warned about.
inline constexpr std::string_view kConfigPathVariable = "ARTUNE_CONFIG";
inline constexpr std::string_view kDatabasePathVariable = "ARTUNE_DB";

// $ARTUNE_CONFIG if set and non-empty, else $XDG_CONFIG_HOME/artune/transport.toml,
// with XDG_CONFIG_HOME defaulting to $HOME/.config; "" when neither HOME nor
// XDG_CONFIG_HOME is set.
std::string DefaultConfigPath(const Environment& environment);
std::string DefaultConfigPath();  // from the process environment

// A copy of the process environment.
Environment ProcessEnvironment();

Result<LoadedConfig> LoadConfig(const ConfigLoadOptions& options);

// Parses a TOML document onto `config` (only the keys present change) and records
// each key's source as "`source_name`:line". Used by LoadConfig; exposed for callers
// that receive TOML text by other means (e.g. a pushed reconfiguration).
Status ApplyToml(std::string_view toml_text, const std::string& source_name, Config& config,
                 std::vector<KnobSource>* sources);

}  // namespace artune::transport
