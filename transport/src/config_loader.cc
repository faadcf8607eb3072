// Config loading: defaults -> TOML file -> environment -> --set overrides.
#include "artune/transport/config_loader.h"

#include <toml++/toml.h>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "artune/transport/knobs.h"

extern char** environ;  // POSIX; declared by no standard C++ header

namespace artune::transport {
namespace {

size_t KnobIndex(const Knob& knob) { return static_cast<size_t>(&knob - Knobs().data()); }

std::string KnownKnobNames() {
  std::string names;
  for (const Knob& knob : Knobs()) {
    if (!names.empty()) names += ", ";
    names += knob.name;
  }
  return names;
}

std::string_view TomlTypeName(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "none";
}

std::string_view AllowedTomlTypes(const Knob& knob) {
  switch (knob.type) {
    case KnobType::kBytes:
      return "an integer (bytes) or a string such as \"16KiB\"";
    case KnobType::kMilliseconds:
      return "an integer (ms) or a string such as \"10s\"";
    case KnobType::kCount:
      return "an integer";
    case KnobType::kEnum:
      return "a string";
  }
  return "a value";
}

// The text of a TOML value as SetKnob reads it, or an error for a type the knob
// cannot take.
Result<std::string> TomlValueText(const Knob& knob, const toml::node& node,
                                  const std::string& where) {
  if (const auto* integer = node.as_integer(); integer != nullptr && knob.type != KnobType::kEnum) {
    return std::to_string(integer->get());
  }
  if (const auto* text = node.as_string(); text != nullptr && knob.type != KnobType::kCount) {
    return text->get();
  }
  std::ostringstream message;
  message << where << ": key '" << knob.name << "' has the wrong type: got a "
          << TomlTypeName(node.type()) << ", expected " << AllowedTomlTypes(knob) << " ("
          << FormatKnobRange(knob) << ")";
  return Status::InvalidArgument(message.str());
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno("cannot open config file " + path, errno);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return Status::FromErrno("cannot read config file " + path, errno);
  return contents.str();
}

bool FileExists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

std::string Lookup(const Environment& environment, const std::string& name) {
  const auto it = environment.find(name);
  return it == environment.end() ? std::string() : it->second;
}

}  // namespace

std::string KnobSource::ToString() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kFile:
      return "file " + location;
    case Kind::kEnvironment:
      return "env " + location;
    case Kind::kFlag:
      return "flag " + location;
  }
  return "unknown";
}

std::string_view KnobSource::KindName() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kFile:
      return "file";
    case Kind::kEnvironment:
      return "env";
    case Kind::kFlag:
      return "flag";
  }
  return "unknown";
}

const KnobSource& LoadedConfig::SourceOf(std::string_view knob_name) const {
  static const KnobSource kDefaultSource;
  const Knob* knob = FindKnob(knob_name);
  if (knob == nullptr || KnobIndex(*knob) >= sources.size()) return kDefaultSource;
  return sources[KnobIndex(*knob)];
}

std::string DefaultConfigPath(const Environment& environment) {
  const std::string explicit_path = Lookup(environment, std::string(kConfigPathVariable));
  if (!explicit_path.empty()) return explicit_path;
  std::string config_home = Lookup(environment, "XDG_CONFIG_HOME");
  if (config_home.empty()) {
    const std::string home = Lookup(environment, "HOME");
    if (home.empty()) return "";
    config_home = home + "/.config";
  }
  return config_home + "/artune/transport.toml";
}

std::string DefaultConfigPath() { return DefaultConfigPath(ProcessEnvironment()); }

Environment ProcessEnvironment() {
  Environment environment;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    environment.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return environment;
}

Status ApplyToml(std::string_view toml_text, const std::string& source_name, Config& config,
                 std::vector<KnobSource>* sources) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& error) {
    std::ostringstream message;
    message << source_name << ":" << error.source().begin.line << ":" << error.source().begin.column
            << ": TOML syntax error: " << error.description();
    return Status::InvalidArgument(message.str());
  }
  // Applied to a copy so that an error leaves `config` untouched.
  Config updated = config;
  std::vector<std::pair<size_t, std::string>> new_sources;
  for (auto&& [key, node] : table) {
    const std::string where = source_name + ":" + std::to_string(key.source().begin.line);
    const Knob* knob = FindKnob(key.str());
    if (knob == nullptr) {
      std::string message = where + ": unknown key '" + std::string(key.str()) + "'";
      if (const Knob* nearest = NearestKnob(key.str())) {
        message += " (did you mean " + std::string(nearest->name) + "?)";
      }
      return Status::InvalidArgument(message + "; known keys: " + KnownKnobNames());
    }
    ARTUNE_ASSIGN_OR_RETURN(const std::string text, TomlValueText(*knob, node, where));
    const Status status = SetKnob(updated, knob->name, text);
    if (!status.ok()) return Status::InvalidArgument(where + ": " + status.message());
    new_sources.emplace_back(KnobIndex(*knob), where);
  }
  config = updated;
  if (sources != nullptr) {
    sources->resize(Knobs().size());
    for (auto& [index, where] : new_sources) {
      (*sources)[index] = KnobSource{KnobSource::Kind::kFile, std::move(where)};
    }
  }
  return Status::Ok();
}

namespace {

// 1. The file: --config's (which must exist), else the default path's (optional
// unless ARTUNE_CONFIG names it). "" when no file applies.
Result<std::string> ConfigFilePath(const ConfigLoadOptions& options,
                                   const Environment& environment) {
  std::string path = options.config_path;
  if (!path.empty()) {
    if (!FileExists(path)) {
      return Status::InvalidArgument("config file " + path +
                                     " does not exist; check the path given with --config");
    }
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) {
      return Status::InvalidArgument("config file " + path +
                                     " is not a regular file (a directory?); give --config the "
                                     "TOML file itself");
    }
  } else if (options.use_default_path) {
    path = DefaultConfigPath(environment);
    // The default file is optional, unless ARTUNE_CONFIG named it explicitly.
    const bool named_by_variable = !Lookup(environment, std::string(kConfigPathVariable)).empty();
    if (!path.empty() && !FileExists(path)) {
      if (named_by_variable) {
        return Status::InvalidArgument("config file " + path + " named by " +
                                       std::string(kConfigPathVariable) +
                                       " does not exist; fix or unset the variable");
      }
      path.clear();
    }
  }
  return path;
}

// Whether an ARTUNE_* variable that is no knob is known to be something else.
bool IsOtherArtuneVariable(const std::string& name) {
  if (name == kConfigPathVariable || name == kDatabasePathVariable) return true;
  // The Soft-RoCE lab (tests/lab) describes itself in ARTUNE_LAB_*: not knobs.
  if (name.starts_with("ARTUNE_LAB_") || name == "ARTUNE_LAB") return true;
  // Secrets are not knobs (credentials.h): the token and TLS files, which
  // `artune sweep --mpi` sets for itself, are read by the transport directly.
  if (name == "ARTUNE_TOKEN_FILE" || name.starts_with("ARTUNE_TLS_")) return true;
  // `artune run` names its relay's socket to the programs it runs (and so to any
  // artune command among them) in ARTUNE_RELAY_SOCKET: not a knob.
  return name == "ARTUNE_RELAY_SOCKET";
}

// 2. The environment's ARTUNE_* knobs over `loaded`; other ARTUNE_* names warn.
Status ApplyEnvironment(const Environment& environment, LoadedConfig& loaded) {
  for (const auto& [name, value] : environment) {
    if (!name.starts_with("ARTUNE_")) continue;
    const Knob* knob = FindKnobByEnvName(name);
    if (knob == nullptr) {
      if (IsOtherArtuneVariable(name)) continue;
      std::string warning = "environment variable " + name + " is not an artune knob";
      std::string as_knob_name;
      for (char c : std::string_view(name).substr(7)) {
        as_knob_name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      if (const Knob* nearest = NearestKnob(as_knob_name)) {
        warning += " (did you mean " + std::string(nearest->env_name) + "?)";
      }
      loaded.warnings.push_back(warning + "; it is ignored");
      continue;
    }
    const Status status = SetKnob(loaded.config, knob->name, value);
    if (!status.ok()) {
      return Status::InvalidArgument("environment variable " + name + ": " + status.message());
    }
    loaded.sources[KnobIndex(*knob)] = KnobSource{KnobSource::Kind::kEnvironment, name};
  }
  return Status::Ok();
}

// 3. The --set NAME=VALUE overrides over `loaded`.
Status ApplyOverrides(const std::vector<std::string>& overrides, LoadedConfig& loaded) {
  for (const std::string& override_text : overrides) {
    const size_t equals = override_text.find('=');
    if (equals == std::string::npos || equals == 0) {
      return Status::InvalidArgument("--set '" + override_text +
                                     "' is not NAME=VALUE (for example --set chunk_size=1MiB)");
    }
    const std::string name = override_text.substr(0, equals);
    const Status status = SetKnob(loaded.config, name, override_text.substr(equals + 1));
    if (!status.ok()) {
      return Status::InvalidArgument("--set " + override_text + ": " + status.message());
    }
    loaded.sources[KnobIndex(*FindKnob(name))] =
        KnobSource{KnobSource::Kind::kFlag, "--set " + override_text};
  }
  return Status::Ok();
}

}  // namespace

Result<LoadedConfig> LoadConfig(const ConfigLoadOptions& options) {
  const Environment environment =
      options.environment.has_value() ? *options.environment : ProcessEnvironment();
  LoadedConfig loaded;
  loaded.sources.resize(Knobs().size());
  ARTUNE_ASSIGN_OR_RETURN(const std::string path, ConfigFilePath(options, environment));
  if (!path.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
    ARTUNE_RETURN_IF_ERROR(ApplyToml(text, path, loaded.config, &loaded.sources));
    loaded.file_path = path;
  }
  ARTUNE_RETURN_IF_ERROR(ApplyEnvironment(environment, loaded));
  ARTUNE_RETURN_IF_ERROR(ApplyOverrides(options.overrides, loaded));
  const Status valid = ValidateConfig(loaded.config);
  if (!valid.ok()) return valid.WithContext("effective config");
  return loaded;
}

}  // namespace artune::transport
