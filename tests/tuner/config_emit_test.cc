// config_emit.h: settings are validated by the knob table, every format reads back
// into the same config, the diff names what changes and where the old value came
// from, and the atomic writer never leaves a half file (a writer SIGKILLed mid-write
// leaves the old file intact).
#include "artune/tuner/config_emit.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../temp_dir.h"
#include "artune/transport/config_loader.h"
#include "artune/transport/knobs.h"

namespace artune::tuner {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;
using transport::Config;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::vector<KnobSetting> Settings(std::initializer_list<const char*> texts) {
  std::vector<KnobSetting> settings;
  for (const char* text : texts) {
    auto setting = ParseKnobSetting(text);
    EXPECT_TRUE(setting.ok()) << setting.status().ToString();
    if (setting.ok()) settings.push_back(*setting);
  }
  return settings;
}

TEST(ConfigEmit, AppliesSettingsOnTopOfTheBase) {
  Config base;
  base.pipeline_depth = 8;
  auto config = ApplyKnobSettings(base, Settings({"eager_threshold=4KiB", "chunk_size=1MiB"}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->eager_threshold, 4096u);
  EXPECT_EQ(config->chunk_size, 1u << 20);
  EXPECT_EQ(config->pipeline_depth, 8u);  // untouched knobs keep the base value
}

TEST(ConfigEmit, RefusesBadSettingsWithTheReason) {
  struct Case {
    const char* setting;
    const char* expected_in_message;
  };
  const Case cases[] = {
      {"chunk_size=1KiB", "out of range"},             // below the 4 KiB minimum
      {"eager_threshold=2MiB", "out of range"},        // above the 1 MiB maximum
      {"pipeline_depth=many", "not"},                  // not a number
      {"fabric=infiniband", "not a known choice"},     // not a choice
      {"chunk_sise=1MiB", "did you mean chunk_size"},  // misspelt knob
  };
  for (const Case& c : cases) {
    auto config = ApplyKnobSettings(Config{}, Settings({c.setting}));
    ASSERT_FALSE(config.ok()) << c.setting;
    EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument) << c.setting;
    EXPECT_NE(config.status().message().find(c.expected_in_message), std::string::npos)
        << config.status().message();
    // The message names the setting as the user typed it.
    EXPECT_NE(config.status().message().find(std::string("--set ") + c.setting), std::string::npos)
        << config.status().message();
  }
  EXPECT_FALSE(ParseKnobSetting("chunk_size").ok());
  EXPECT_FALSE(ParseKnobSetting("=4KiB").ok());
}

TEST(ConfigEmit, RefusesCrossKnobViolations) {
  // 4096 eager buffers of 1 MiB + header pin more than the 1 GiB limit.
  auto config =
      ApplyKnobSettings(Config{}, Settings({"eager_threshold=1MiB", "eager_buffer_count=4096"}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("the config to apply"), std::string::npos)
      << config.status().message();
}

TEST(ConfigEmit, TomlReadsBackThroughTheLoader) {
  TempDir dir;
  auto config = ApplyKnobSettings(
      Config{}, Settings({"eager_threshold=2KiB", "chunk_size=256KiB", "polling=busy"}));
  ASSERT_TRUE(config.ok());
  const std::string path = dir.path() + "/transport.toml";
  const std::string text = RenderConfig(*config, ConfigFormat::kToml, {"from sweep 7", ""});
  EXPECT_EQ(text.rfind("# from sweep 7\n#\n", 0), 0u) << text;
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());

  transport::ConfigLoadOptions options;
  options.config_path = path;
  options.environment = transport::Environment{};
  auto loaded = transport::LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(transport::ConfigToMap(loaded->config), transport::ConfigToMap(*config));
  EXPECT_EQ(loaded->SourceOf("chunk_size").kind, transport::KnobSource::Kind::kFile);
}

TEST(ConfigEmit, EnvLinesAreTheKnobVariablesTheLoaderReads) {
  auto config = ApplyKnobSettings(Config{}, Settings({"eager_threshold=8KiB", "fabric=tcp"}));
  ASSERT_TRUE(config.ok());
  const std::string text = RenderConfig(*config, ConfigFormat::kEnv);
  // Parse the lines back into an environment and load it.
  transport::Environment environment;
  std::istringstream lines(text);
  std::string line;
  size_t exports = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    ASSERT_EQ(line.rfind("export ARTUNE_", 0), 0u) << line;
    const std::string assignment = line.substr(7);
    const size_t equals = assignment.find('=');
    environment[assignment.substr(0, equals)] = assignment.substr(equals + 1);
    ++exports;
  }
  EXPECT_EQ(exports, transport::Knobs().size());
  EXPECT_EQ(environment.at("ARTUNE_EAGER_THRESHOLD"), "8KiB");
  EXPECT_EQ(environment.at("ARTUNE_FABRIC"), "tcp");
  transport::ConfigLoadOptions options;
  options.use_default_path = false;
  options.environment = environment;
  auto loaded = transport::LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(transport::ConfigToMap(loaded->config), transport::ConfigToMap(*config));
  EXPECT_TRUE(loaded->warnings.empty());
}

TEST(ConfigEmit, JsonHasNumbersForSizesAndNamesForEnums) {
  auto config = ApplyKnobSettings(Config{}, Settings({"chunk_size=2MiB", "polling=busy"}));
  ASSERT_TRUE(config.ok());
  const auto json = nlohmann::json::parse(RenderConfig(*config, ConfigFormat::kJson));
  EXPECT_EQ(json.size(), transport::Knobs().size());
  EXPECT_EQ(json.at("chunk_size"), 2u << 20);
  EXPECT_EQ(json.at("polling"), "busy");
  EXPECT_EQ(json.at("timeout_ms"), Config{}.timeout_ms);
}

TEST(ConfigEmit, DiffMarksChangesAndKeepsSources) {
  Config in_force;
  std::vector<transport::KnobSource> sources(transport::Knobs().size());
  sources[1] = {transport::KnobSource::Kind::kFile, "/x/transport.toml:4"};  // chunk_size
  ASSERT_EQ(transport::Knobs()[1].name, "chunk_size");
  auto proposed = ApplyKnobSettings(in_force, Settings({"chunk_size=1MiB"}));
  ASSERT_TRUE(proposed.ok());
  const auto changes = DiffConfigs(in_force, sources, *proposed);
  ASSERT_EQ(changes.size(), transport::Knobs().size());
  size_t changed = 0;
  for (const KnobChange& change : changes) {
    if (!change.changed) {
      EXPECT_EQ(change.current, change.proposed);
      continue;
    }
    ++changed;
    EXPECT_EQ(change.name, "chunk_size");
    EXPECT_EQ(change.current, "512KiB");
    EXPECT_EQ(change.proposed, "1MiB");
    EXPECT_EQ(change.current_source, "file /x/transport.toml:4");
  }
  EXPECT_EQ(changed, 1u);
  EXPECT_EQ(DiffConfigs(in_force, {}, *proposed, "server")[0].current_source, "server");
}

TEST(ConfigEmit, FormatsParse) {
  EXPECT_EQ(*ParseConfigFormat("env"), ConfigFormat::kEnv);
  EXPECT_EQ(*ParseConfigFormat("json"), ConfigFormat::kJson);
  EXPECT_EQ(*ParseConfigFormat("toml"), ConfigFormat::kToml);
  EXPECT_EQ(ParseConfigFormat("yaml").status().code(), ErrorCode::kInvalidArgument);
}

TEST(AtomicWrite, ReplacesAndCreatesParentsWithoutLeftovers) {
  TempDir dir;
  const std::string path = dir.path() + "/nested/artune/transport.toml";
  ASSERT_TRUE(WriteFileAtomically(path, "first\n").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second\n").ok());
  EXPECT_EQ(ReadAll(path), "second\n");
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);  // no temporary file left behind
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
}

// Issue 16 (low): `apply config --output` turned a 0600 config into 0644 and
// replaced a symlink by a file.
TEST(AtomicWrite, KeepsTheModeAndWritesThroughSymlinks) {
  TempDir dir;
  const std::string real = dir.path() + "/real.toml";
  ASSERT_TRUE(WriteFileAtomically(real, "first\n").ok());
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write);
  const std::string link = dir.path() + "/link.toml";
  fs::create_symlink(real, link);
  ASSERT_TRUE(WriteFileAtomically(link, "second\n").ok());
  EXPECT_TRUE(fs::is_symlink(link)) << "the link was replaced by a file";
  EXPECT_EQ(ReadAll(real), "second\n");
  EXPECT_EQ(fs::status(real).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST(AtomicWrite, FailureLeavesTheTargetAndNoTemporary) {
  TempDir dir;
  // The target is a non-empty directory: rename(2) fails after the temporary file
  // was written in full.
  const std::string path = dir.path() + "/occupied";
  fs::create_directories(path + "/inside");
  const Status status = WriteFileAtomically(path, "data");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_NE(status.message().find(path), std::string::npos) << status.message();
  EXPECT_TRUE(fs::is_directory(path + "/inside"));
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(AtomicWrite, KilledWriterLeavesTheOldFileWhole) {
  TempDir dir;
  const std::string path = dir.path() + "/transport.toml";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents\n").ok());
  // A large write, so the child is still writing when it is killed.
  const std::string big(64u << 20, 'x');
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const Status status = WriteFileAtomically(path, big);
    _exit(status.ok() ? 0 : 1);
  }
  // Wait until the temporary file exists and has started to fill, then kill.
  const std::string temporary = path + ".tmp." + std::to_string(child);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool seen = false;
  while (std::chrono::steady_clock::now() < give_up) {
    std::error_code error;
    if (fs::file_size(temporary, error) > 0 && !error) {
      seen = true;
      break;
    }
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) break;  // finished before we saw it
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  const std::string contents = ReadAll(path);
  if (!seen) {
    // The child won the race and finished: the new file must then be whole.
    EXPECT_EQ(contents.size(), big.size());
    return;
  }
  // Killed mid-write or just after: old file whole, or new file whole; never a part.
  EXPECT_TRUE(contents == "old contents\n" || contents.size() == big.size())
      << "target has " << contents.size() << " bytes";
}

}  // namespace
}  // namespace artune::tuner
