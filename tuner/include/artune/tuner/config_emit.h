// Emitting a tuned transport config: building it from knob settings (a sweep's
// winner or `--set NAME=VALUE`), checking it against the knob table, comparing it
// with the config in force, rendering it as TOML / environment variables / JSON,
// and writing it to disk so that a killed writer never leaves a half file.
// Used by `artune apply config` and by the loop script's comparisons.
//
// Threading: every function is pure or touches only the file it is given; safe to
// call from any thread.
//
// Errors: kInvalidArgument for a bad knob name or value (the message names the
// setting, the value and the allowed range, from the knob table); kIoError for a
// file that cannot be written (the message names the path and errno text).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/transport/config_loader.h"

namespace artune::tuner {

enum class ConfigFormat { kToml, kEnv, kJson };
std::string_view ConfigFormatName(ConfigFormat format);  // "toml", "env", "json"
// "toml", "env" or "json"; kInvalidArgument naming the choices otherwise.
Result<ConfigFormat> ParseConfigFormat(std::string_view text);

// One knob setting: name (snake_case, as in knobs.h) and value text (as SetKnob
// reads it, e.g. "16KiB", "tcp"). `origin` says where it came from, for error
// messages: "--set eager_threshold=1x", "sweep 4 best trial".
struct KnobSetting {
  std::string name;
  std::string value;
  std::string origin;
};

// "NAME=VALUE" (the --set syntax) as a setting with origin "--set NAME=VALUE".
Result<KnobSetting> ParseKnobSetting(std::string_view text);

// `base` with every setting applied in order, then checked as a whole
// (ValidateConfig: ranges and cross-knob rules). On any error nothing is returned:
// the message names the setting's origin, the value and the rule it broke.
Result<transport::Config> ApplyKnobSettings(const transport::Config& base,
                                            const std::vector<KnobSetting>& settings);

// One knob as in force and as proposed.
struct KnobChange {
  std::string name;
  std::string current;         // FormatKnob text of the value in force
  std::string current_source;  // KnobSource::ToString(), e.g. "file /x.toml:3", "default"
  std::string proposed;        // FormatKnob text of the proposed value
  bool changed = false;
};

// Every knob, in knob-table order. `in_force_sources` has one entry per knob (as
// LoadedConfig::sources), or is empty when the sources are not known (then every
// source reads `unknown_source`).
std::vector<KnobChange> DiffConfigs(const transport::Config& in_force,
                                    const std::vector<transport::KnobSource>& in_force_sources,
                                    const transport::Config& proposed,
                                    std::string_view unknown_source = "unknown");

// The changes as `artune apply config --json` (and each group of `--cluster`)
// lists them: [{name, current, source, new, changed}], in the given order.
nlohmann::ordered_json KnobChangesJson(const std::vector<KnobChange>& changes);

// Renders `config`:
//   toml  the transport's file format (ToToml, knobs.h), after a comment header made
//         of `header_comment` lines (each prefixed "# "); LoadConfig reads it back
//         into the same Config.
//   env   one "export ARTUNE_<KNOB>=<value>" line per knob (values are plain tokens,
//         no quoting needed), after the same comment header; `eval`-able by sh.
//   json  one object {knob: value}: numbers (bytes, counts, ms) for numeric knobs,
//         names for enums, the same shape `artune config show --json` uses for values.
std::string RenderConfig(const transport::Config& config, ConfigFormat format,
                         const std::vector<std::string>& header_comment = {});

// Writes `contents` to `path` atomically: creates the parent directory if missing,
// writes a temporary file next to the target (same directory, so the rename stays
// on one file system), fsyncs it, renames it over `path`, and fsyncs the directory.
// A reader sees the old file or the whole new one, never a part; a writer killed
// mid-way leaves the target untouched (and at most a stray "<path>.tmp.<pid>").
// A new file gets mode 0644 (less the umask); an existing one keeps its permission
// bits. A symlink is written through: the file it names is replaced, the link
// stays. Errors: kIoError naming the path and errno text; on error the temporary
// file is removed and the target is untouched.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The config in force, as `artune config show` sees it: defaults, file, ARTUNE_*.
// A file named by ARTUNE_CONFIG that does not exist yet is the one `apply config`
// creates: the config in force is then the defaults and the environment. Errors:
// LoadConfig's, saying to fix or remove the file or unset the variable it names.
Result<transport::LoadedConfig> LoadConfigInForce();

// The default config path (transport::DefaultConfigPath), or kInvalidArgument
// saying to give --output FILE when HOME, XDG_CONFIG_HOME and ARTUNE_CONFIG are
// all unset.
Result<std::string> DefaultConfigPathOrError();

// Knobs set by ARTUNE_* variables still win over the file at load time: one
// warning per changed knob that `in_force` takes from the environment.
std::vector<std::string> EnvironmentShadows(const std::vector<KnobChange>& changes,
                                            const transport::LoadedConfig& in_force);

// A running server keeps its own fabric, idle_timeout_ms and verbs_* values (not
// Knob::live): pushing one would change nothing. kInvalidArgument for the first
// such setting, saying how to change it instead (write a file, restart the
// server); Ok when every setting is live.
Status CheckLiveSettings(const std::vector<KnobSetting>& settings);

// `artune config show --json`: {file (null when none was read), knobs: [{name,
// value, text, type, unit, default, source, source_detail, env, doc, live, and
// choices or min and max}] in knob-table order, warnings}. Unordered JSON: keys
// print sorted, as they always have.
nlohmann::json LoadedConfigJson(const transport::LoadedConfig& loaded);

// `artune config explain --json`: {config, eager_buffer_bytes, ranges: [{protocol,
// min_bytes, max_bytes (null: unbounded), how}], examples: [{bytes, protocol,
// chunks, pipeline_rounds}]} (transport/protocol_ranges.h).
nlohmann::json ConfigExplainJson(const transport::Config& config);

}  // namespace artune::tuner
