// Tuned configs: settings -> validated Config -> diff, text, atomic file.
#include "artune/tuner/config_emit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "artune/base/enum_names.h"
#include "artune/transport/knobs.h"
#include "artune/transport/protocol.h"
#include "artune/transport/protocol_ranges.h"

namespace artune::tuner {
namespace {

using transport::Config;
using transport::Knob;
using transport::KnobType;

std::string CommentHeader(const std::vector<std::string>& lines) {
  std::string header;
  for (const std::string& line : lines) header += line.empty() ? "#\n" : "# " + line + "\n";
  if (!header.empty()) header += "\n";
  return header;
}

// write(2) until done, retrying on EINTR and short writes.
Status WriteAll(int fd, std::string_view contents, const std::string& path) {
  while (!contents.empty()) {
    const ssize_t written = ::write(fd, contents.data(), contents.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("cannot write " + path, errno);
    }
    contents.remove_prefix(static_cast<size_t>(written));
  }
  return Status::Ok();
}

// Makes the rename durable: the directory entry itself must reach the disk.
Status SyncDirectory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open directory " + directory, errno);
  const int result = ::fsync(fd);
  const int saved_errno = errno;
  ::close(fd);
  // Some file systems (tmpfs on old kernels) reject fsync on directories; the rename
  // is still atomic there.
  if (result != 0 && saved_errno != EINVAL) {
    return Status::FromErrno("cannot sync directory " + directory, saved_errno);
  }
  return Status::Ok();
}

// A knob's value as `config show --json` gives it: the name of an enum's choice,
// else the number.
nlohmann::json KnobValueJson(const Knob& knob, uint64_t value) {
  if (knob.type == KnobType::kEnum) return transport::FormatKnobValue(knob, value);
  return value;
}

}  // namespace

constexpr std::array<EnumName<ConfigFormat>, 3> kConfigFormatNames = {{
    {ConfigFormat::kToml, "toml"},
    {ConfigFormat::kEnv, "env"},
    {ConfigFormat::kJson, "json"},
}};

std::string_view ConfigFormatName(ConfigFormat format) {
  return NameOf(kConfigFormatNames, format, "unknown");
}

Result<ConfigFormat> ParseConfigFormat(std::string_view text) {
  if (std::optional<ConfigFormat> format = ValueNamed(kConfigFormatNames, text)) return *format;
  return Status::InvalidArgument("unknown config format '" + std::string(text) + "'; choose " +
                                 NameList(kConfigFormatNames, " or "));
}

Result<KnobSetting> ParseKnobSetting(std::string_view text) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    return Status::InvalidArgument("--set '" + std::string(text) +
                                   "' is not NAME=VALUE (for example --set chunk_size=1MiB)");
  }
  return KnobSetting{std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)),
                     "--set " + std::string(text)};
}

Result<Config> ApplyKnobSettings(const Config& base, const std::vector<KnobSetting>& settings) {
  Config config = base;
  for (const KnobSetting& setting : settings) {
    const Status status = transport::SetKnob(config, setting.name, setting.value);
    if (!status.ok()) return status.WithContext(setting.origin);
  }
  const Status valid = transport::ValidateConfig(config);
  if (!valid.ok()) return valid.WithContext("the config to apply");
  return config;
}

std::vector<KnobChange> DiffConfigs(const Config& in_force,
                                    const std::vector<transport::KnobSource>& in_force_sources,
                                    const Config& proposed, std::string_view unknown_source) {
  const auto knobs = transport::Knobs();
  std::vector<KnobChange> changes;
  changes.reserve(knobs.size());
  for (size_t i = 0; i < knobs.size(); ++i) {
    const Knob& knob = knobs[i];
    KnobChange change;
    change.name = std::string(knob.name);
    change.current = transport::FormatKnobValue(knob, knob.get(in_force));
    change.current_source =
        i < in_force_sources.size() ? in_force_sources[i].ToString() : std::string(unknown_source);
    change.proposed = transport::FormatKnobValue(knob, knob.get(proposed));
    change.changed = knob.get(in_force) != knob.get(proposed);
    changes.push_back(std::move(change));
  }
  return changes;
}

std::string RenderConfig(const Config& config, ConfigFormat format,
                         const std::vector<std::string>& header_comment) {
  switch (format) {
    case ConfigFormat::kToml:
      return CommentHeader(header_comment) + transport::ToToml(config);
    case ConfigFormat::kEnv: {
      std::string text = CommentHeader(header_comment);
      for (const Knob& knob : transport::Knobs()) {
        text += "export " + std::string(knob.env_name) + "=" +
                transport::FormatKnobValue(knob, knob.get(config)) + "\n";
      }
      return text;
    }
    case ConfigFormat::kJson: {
      nlohmann::ordered_json document = nlohmann::ordered_json::object();
      for (const Knob& knob : transport::Knobs()) {
        const uint64_t value = knob.get(config);
        if (knob.type == KnobType::kEnum) {
          document[std::string(knob.name)] = transport::FormatKnobValue(knob, value);
        } else {
          document[std::string(knob.name)] = value;
        }
      }
      return document.dump(2) + "\n";
    }
  }
  return "";
}

Status WriteFileAtomically(const std::string& requested, std::string_view contents) {
  if (requested.empty()) return Status::InvalidArgument("no path to write the config to");
  // Through a symlink to the file it names (the link stays a link), keeping an
  // existing file's permission bits (a 0600 config stays 0600).
  std::error_code resolve_error;
  const bool is_link =
      std::filesystem::is_symlink(std::filesystem::symlink_status(requested, resolve_error));
  resolve_error.clear();  // a path that does not exist yet is no link
  const std::filesystem::path target =
      is_link ? std::filesystem::weakly_canonical(requested, resolve_error)
              : std::filesystem::path(requested);
  if (resolve_error) {
    return Status::IoError("cannot resolve the symlink " + requested + ": " +
                           resolve_error.message());
  }
  const std::string path = target.string();
  struct stat existing {};
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  std::filesystem::path directory = target.parent_path();
  if (directory.empty()) directory = ".";
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return Status::IoError("cannot create directory " + directory.string() + ": " +
                           error.message());
  }
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("cannot create " + temporary, errno);
  Status status = WriteAll(fd, contents, temporary);
  if (status.ok() && exists && ::fchmod(fd, existing.st_mode & 07777) != 0) {
    status = Status::FromErrno("cannot keep the mode of " + path + " on " + temporary, errno);
  }
  if (status.ok() && ::fsync(fd) != 0)
    status = Status::FromErrno("cannot sync " + temporary, errno);
  if (::close(fd) != 0 && status.ok()) {
    status = Status::FromErrno("cannot close " + temporary, errno);
  }
  if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    status = Status::FromErrno("cannot rename " + temporary + " to " + path, errno);
  }
  if (!status.ok()) {
    ::unlink(temporary.c_str());
    return status;
  }
  return SyncDirectory(directory.string());
}

nlohmann::ordered_json KnobChangesJson(const std::vector<KnobChange>& changes) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const KnobChange& change : changes) {
    array.push_back({{"name", change.name},
                     {"current", change.current},
                     {"source", change.current_source},
                     {"new", change.proposed},
                     {"changed", change.changed}});
  }
  return array;
}

std::vector<std::string> EnvironmentShadows(const std::vector<KnobChange>& changes,
                                            const transport::LoadedConfig& in_force) {
  std::vector<std::string> warnings;
  for (const KnobChange& change : changes) {
    const transport::KnobSource& source = in_force.SourceOf(change.name);
    if (change.changed && source.kind == transport::KnobSource::Kind::kEnvironment) {
      warnings.push_back(source.location + " in the environment overrides " + change.name +
                         " from the file; unset it for the applied value to take effect");
    }
  }
  return warnings;
}

Status CheckLiveSettings(const std::vector<KnobSetting>& settings) {
  // A running server keeps its own fabric, idle_timeout_ms and verbs_* values (not
  // Knob::live): pushing one would change nothing, so say how to change it instead.
  for (const KnobSetting& setting : settings) {
    const transport::Knob* knob = transport::FindKnob(setting.name);
    if (knob == nullptr || knob->live) continue;
    return Status::InvalidArgument(
        "--live: " + setting.name + " is set when a transport starts, and a running server " +
        "keeps its own (from " + setting.origin + "); write it to the server's config " +
        "(artune apply config --set " + setting.name + "=" + setting.value +
        " --output FILE) and restart `artune serve` or `artune relay` with it");
  }
  return Status::Ok();
}

Result<transport::LoadedConfig> LoadConfigInForce() {
  transport::ConfigLoadOptions load_options;
  std::error_code exists_error;
  const std::string default_path = transport::DefaultConfigPath();
  load_options.use_default_path =
      !default_path.empty() && std::filesystem::exists(default_path, exists_error);
  Result<transport::LoadedConfig> loaded = transport::LoadConfig(load_options);
  if (!loaded.ok()) {
    return loaded.status().WithContext(
        "the config in force cannot be loaded (fix or remove the file, or unset the ARTUNE_* "
        "variable it names)");
  }
  return loaded;
}

Result<std::string> DefaultConfigPathOrError() {
  std::string path = transport::DefaultConfigPath();
  if (path.empty()) {
    return Status::InvalidArgument(
        "no default config path: HOME, XDG_CONFIG_HOME and ARTUNE_CONFIG are all unset; "
        "give --output FILE");
  }
  return path;
}

nlohmann::json LoadedConfigJson(const transport::LoadedConfig& loaded) {
  using nlohmann::json;
  const auto knobs = transport::Knobs();
  json knob_array = json::array();
  for (size_t i = 0; i < knobs.size(); ++i) {
    const Knob& knob = knobs[i];
    json entry = {
        {"name", knob.name},
        {"value", KnobValueJson(knob, knob.get(loaded.config))},
        {"text", transport::FormatKnobValue(knob, knob.get(loaded.config))},
        {"type", transport::KnobTypeName(knob.type)},
        {"unit", knob.unit},
        {"default", KnobValueJson(knob, knob.DefaultValue())},
        {"source", loaded.sources[i].KindName()},
        {"source_detail", loaded.sources[i].location},
        {"env", knob.env_name},
        {"doc", knob.doc},
        {"live", knob.live},
    };
    if (knob.type == KnobType::kEnum) {
      entry["choices"] = std::vector<std::string>(knob.choices.begin(), knob.choices.end());
    } else {
      entry["min"] = knob.min_value;
      entry["max"] = knob.max_value;
    }
    knob_array.push_back(std::move(entry));
  }
  return {
      {"file", loaded.file_path.empty() ? json(nullptr) : json(loaded.file_path)},
      {"knobs", std::move(knob_array)},
      {"warnings", loaded.warnings},
  };
}

nlohmann::json ConfigExplainJson(const Config& config) {
  using nlohmann::json;
  json range_array = json::array();
  for (const transport::ProtocolRange& row : transport::ProtocolRanges(config)) {
    range_array.push_back({{"protocol", transport::ProtocolName(row.protocol)},
                           {"min_bytes", row.min_bytes},
                           {"max_bytes", row.max_bytes ? json(*row.max_bytes) : json(nullptr)},
                           {"how", row.how}});
  }
  json example_array = json::array();
  for (uint64_t bytes : transport::ExampleSliceSizes(config)) {
    const transport::SliceExample example = transport::ExplainSlice(bytes, config);
    example_array.push_back({{"bytes", bytes},
                             {"protocol", transport::ProtocolName(example.protocol)},
                             {"chunks", example.chunks},
                             {"pipeline_rounds", example.rounds}});
  }
  return {
      {"config", transport::ConfigToMap(config)},
      {"eager_buffer_bytes", transport::EagerBufferBytes(config)},
      {"ranges", std::move(range_array)},
      {"examples", std::move(example_array)},
  };
}

}  // namespace artune::tuner
