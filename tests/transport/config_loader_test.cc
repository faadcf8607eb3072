// Config loading: file, environment and --set layers, their precedence and sources,
// bad config files, the default path, and the ToToml round trip.
#include "artune/transport/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "artune/transport/knobs.h"

namespace artune::transport {
namespace {

using ::testing::HasSubstr;

// tests/transport/testdata (its absolute path comes from CMake).
std::string TestData(const std::string& name) {
  return (std::filesystem::path(ARTUNE_TRANSPORT_TESTDATA) / name).string();
}

// A fresh directory under the test's temp dir, removed when the test ends.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        std::filesystem::path(::testing::TempDir()) /
        ("artune_config_loader_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Write(const std::string& relative, const std::string& contents) const {
    const std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << contents;
    return file.string();
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

ConfigLoadOptions FileOnly(const std::string& path) {
  ConfigLoadOptions options;
  options.config_path = path;
  options.environment = Environment{};
  return options;
}

TEST(ConfigLoaderTest, NoFileNoEnvironmentGivesDefaults) {
  ConfigLoadOptions options;
  options.environment = Environment{};  // no HOME: no default path either
  const auto loaded = LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(ConfigToMap(loaded->config), ConfigToMap(Config{}));
  EXPECT_TRUE(loaded->file_path.empty());
  ASSERT_EQ(loaded->sources.size(), Knobs().size());
  for (const KnobSource& source : loaded->sources) {
    EXPECT_EQ(source.kind, KnobSource::Kind::kDefault);
    EXPECT_EQ(source.ToString(), "default");
  }
}

// Issue 16 (low): `--config DIR` was taken as "no config".
TEST(ConfigLoaderTest, ADirectoryIsNoConfigFile) {
  ScratchDir dir;
  const auto loaded = LoadConfig(FileOnly(dir.path()));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(), HasSubstr("not a regular file"));
}

TEST(ConfigLoaderTest, ReadsEveryValueFormFromAFile) {
  const std::string path = TestData("good.toml");
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Config& config = loaded->config;
  EXPECT_EQ(config.eager_threshold, 8192u);
  EXPECT_EQ(config.chunk_size, 1u << 20);
  EXPECT_EQ(config.pipeline_depth, 8u);
  EXPECT_EQ(config.coalesce_limit, 4096u);
  EXPECT_EQ(config.fabric, FabricKind::kTcp);
  EXPECT_EQ(config.polling, PollingMode::kBusy);
  EXPECT_EQ(config.timeout_ms, 30000u);
  EXPECT_EQ(config.max_outstanding, Config{}.max_outstanding);
  EXPECT_EQ(loaded->file_path, path);
  EXPECT_EQ(loaded->SourceOf("eager_threshold").ToString(), "file " + path + ":2");
  EXPECT_EQ(loaded->SourceOf("timeout_ms").ToString(), "file " + path + ":8");
  EXPECT_EQ(loaded->SourceOf("max_outstanding").kind, KnobSource::Kind::kDefault);
}

TEST(ConfigLoaderTest, UnknownKeyNamesKeyLineAndNearestKnob) {
  const std::string path = TestData("unknown_key.toml");
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(), HasSubstr(path + ":4"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("unknown key 'eager_treshold'"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("did you mean eager_threshold?"));
}

TEST(ConfigLoaderTest, WrongTypeNamesKeyTypeAndLine) {
  const std::string path = TestData("wrong_type.toml");
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path + ":3"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("'pipeline_depth'"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("got a float"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("1 .. 64"));
}

TEST(ConfigLoaderTest, OutOfRangeNamesKeyValueRangeAndLine) {
  const std::string path = TestData("out_of_range.toml");
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path + ":3"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("chunk_size"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("'128MiB'"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("4KiB .. 64MiB"));
}

TEST(ConfigLoaderTest, BadEnumNamesTheChoices) {
  const std::string path = TestData("bad_enum.toml");
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path + ":1"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("'infiniband'"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("tcp|verbs|auto"));
}

TEST(ConfigLoaderTest, SyntaxErrorNamesLineAndColumn) {
  const std::string path = TestData("syntax_error.toml");
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path + ":2:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("TOML syntax error"));
}

TEST(ConfigLoaderTest, NegativeAndTableValuesAreRejected) {
  ScratchDir dir;
  auto loaded = LoadConfig(FileOnly(dir.Write("negative.toml", "max_outstanding = -1\n")));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(":1: max_outstanding: value '-1'"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("1 .. 4096"));

  loaded = LoadConfig(FileOnly(dir.Write("table.toml", "[transport]\nchunk_size = 4096\n")));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("unknown key 'transport'"));

  loaded = LoadConfig(FileOnly(dir.Write("enum_int.toml", "\n\nfabric = 1\n")));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(":3: key 'fabric' has the wrong type"));
}

TEST(ConfigLoaderTest, MissingExplicitFileIsAnError) {
  const auto loaded = LoadConfig(FileOnly("/nonexistent/artune/transport.toml"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(), HasSubstr("/nonexistent/artune/transport.toml"));
}

TEST(ConfigLoaderTest, DefaultPathFollowsArtuneConfigThenXdgThenHome) {
  EXPECT_EQ(DefaultConfigPath(Environment{
                {"ARTUNE_CONFIG", "/a/b.toml"}, {"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}}),
            "/a/b.toml");
  EXPECT_EQ(DefaultConfigPath(Environment{{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}}),
            "/x/artune/transport.toml");
  EXPECT_EQ(DefaultConfigPath(Environment{{"HOME", "/h"}}), "/h/.config/artune/transport.toml");
  EXPECT_EQ(DefaultConfigPath(Environment{}), "");
}

TEST(ConfigLoaderTest, DefaultFileIsReadWhenPresentAndOptionalWhenMissing) {
  ScratchDir dir;
  ConfigLoadOptions options;
  options.environment = Environment{{"HOME", dir.path()}};
  auto loaded = LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->file_path.empty());

  const std::string path = dir.Write(".config/artune/transport.toml", "pipeline_depth = 3\n");
  loaded = LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->file_path, path);
  EXPECT_EQ(loaded->config.pipeline_depth, 3u);

  options.use_default_path = false;
  loaded = LoadConfig(options);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->config.pipeline_depth, Config{}.pipeline_depth);
}

TEST(ConfigLoaderTest, MissingFileNamedByArtuneConfigIsAnError) {
  ConfigLoadOptions options;
  options.environment = Environment{{"ARTUNE_CONFIG", "/nonexistent/x.toml"}};
  const auto loaded = LoadConfig(options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(), HasSubstr("ARTUNE_CONFIG"));
}

TEST(ConfigLoaderTest, PrecedenceIsDefaultThenFileThenEnvironmentThenFlags) {
  ScratchDir dir;
  ConfigLoadOptions options;
  options.config_path =
      dir.Write("c.toml", "eager_threshold = 1024\nchunk_size = 8192\npipeline_depth = 2\n");
  options.environment = Environment{{"ARTUNE_CHUNK_SIZE", "16KiB"}, {"ARTUNE_PIPELINE_DEPTH", "5"}};
  options.overrides = {"pipeline_depth=7", "polling=busy"};
  const auto loaded = LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->config.eager_threshold, 1024u);
  EXPECT_EQ(loaded->config.chunk_size, 16384u);
  EXPECT_EQ(loaded->config.pipeline_depth, 7u);
  EXPECT_EQ(loaded->config.polling, PollingMode::kBusy);
  EXPECT_EQ(loaded->SourceOf("eager_threshold").kind, KnobSource::Kind::kFile);
  EXPECT_EQ(loaded->SourceOf("chunk_size").ToString(), "env ARTUNE_CHUNK_SIZE");
  EXPECT_EQ(loaded->SourceOf("pipeline_depth").ToString(), "flag --set pipeline_depth=7");
  EXPECT_EQ(loaded->SourceOf("polling").KindName(), "flag");
  EXPECT_EQ(loaded->SourceOf("timeout_ms").KindName(), "default");
}

TEST(ConfigLoaderTest, BadEnvironmentValueNamesTheVariable) {
  ConfigLoadOptions options;
  options.environment = Environment{{"ARTUNE_EAGER_THRESHOLD", "5MiB"}};
  const auto loaded = LoadConfig(options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("ARTUNE_EAGER_THRESHOLD"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("'5MiB'"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("0 .. 1MiB"));
}

TEST(ConfigLoaderTest, UnknownArtuneVariablesAreWarningsNotErrors) {
  ConfigLoadOptions options;
  options.environment = Environment{{"ARTUNE_EAGER_TRESHOLD", "1"},
                                    {"ARTUNE_DB", "/tmp/x.db"},
                                    {"ARTUNE_CONFIG", ""},
                                    {"ARTUNE_LAB", "1"},
                                    {"ARTUNE_LAB_QP_TIMEOUT", "17"},
                                    {"OTHER_VARIABLE", "1"},
                                    {"ARTUNE_RELAY_SOCKET", "/tmp/artune-run.sock"}};
  const auto loaded = LoadConfig(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_THAT(loaded->warnings[0], HasSubstr("ARTUNE_EAGER_TRESHOLD"));
  EXPECT_THAT(loaded->warnings[0], HasSubstr("did you mean ARTUNE_EAGER_THRESHOLD?"));
}

TEST(ConfigLoaderTest, BadOverridesAreErrors) {
  ConfigLoadOptions options;
  options.environment = Environment{};
  options.overrides = {"chunk_size"};
  EXPECT_THAT(LoadConfig(options).status().message(), HasSubstr("is not NAME=VALUE"));
  options.overrides = {"chunk_sise=1MiB"};
  EXPECT_THAT(LoadConfig(options).status().message(), HasSubstr("did you mean chunk_size?"));
  options.overrides = {"timeout_ms=0"};
  const Status status = LoadConfig(options).status();
  EXPECT_THAT(status.message(), HasSubstr("--set timeout_ms=0"));
  EXPECT_THAT(status.message(), HasSubstr("1 .. 3600000"));
}

TEST(ConfigLoaderTest, CrossKnobRuleIsCheckedOnTheEffectiveConfig) {
  ConfigLoadOptions options;
  options.environment = Environment{};
  options.overrides = {"eager_threshold=1MiB", "eager_buffer_count=4096"};
  const auto loaded = LoadConfig(options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("effective config"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("eager_buffer_count"));
}

TEST(ConfigLoaderTest, ToTomlRoundTrips) {
  Config config;
  config.eager_threshold = 1000;
  config.chunk_size = 2 << 20;
  config.pipeline_depth = 16;
  config.coalesce_limit = 0;
  config.max_outstanding = 128;
  config.eager_buffer_count = 32;
  config.fabric = FabricKind::kVerbs;
  config.polling = PollingMode::kBusy;
  config.timeout_ms = 1234;
  ScratchDir dir;
  const std::string path = dir.Write("round.toml", ToToml(config));
  const auto loaded = LoadConfig(FileOnly(path));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message() << "\n" << ToToml(config);
  EXPECT_EQ(ConfigToMap(loaded->config), ConfigToMap(config));
  for (const KnobSource& source : loaded->sources) {
    EXPECT_EQ(source.kind, KnobSource::Kind::kFile);
  }
}

// A valid value of `knob` that differs from its default.
uint64_t NonDefaultValue(const Knob& knob) {
  return knob.DefaultValue() == knob.min_value ? knob.max_value : knob.min_value;
}

TEST(ConfigLoaderTest, EveryKnobCanBeSetFromEachLayer) {
  for (const Knob& knob : Knobs()) {
    const std::string text = FormatKnobValue(knob, NonDefaultValue(knob));
    ScratchDir dir;
    // Counts and durations as TOML integers (FormatKnobValue gives plain numbers for
    // them), sizes with units and enums as strings: the forms ToToml writes.
    const bool as_integer = knob.type == KnobType::kCount || knob.type == KnobType::kMilliseconds;
    const std::string toml_value = as_integer ? text : "\"" + text + "\"";
    const std::string path =
        dir.Write("k.toml", "# comment\n" + std::string(knob.name) + " = " + toml_value + "\n");
    const std::vector<std::pair<ConfigLoadOptions, std::string>> layers = [&] {
      std::vector<std::pair<ConfigLoadOptions, std::string>> result;
      result.emplace_back(FileOnly(path), "file " + path + ":2");
      ConfigLoadOptions env;
      env.environment = Environment{{std::string(knob.env_name), text}};
      result.emplace_back(env, "env " + std::string(knob.env_name));
      ConfigLoadOptions flag;
      flag.environment = Environment{};
      flag.overrides = {std::string(knob.name) + "=" + text};
      result.emplace_back(flag, "flag --set " + std::string(knob.name) + "=" + text);
      return result;
    }();
    for (const auto& [options, expected_source] : layers) {
      const auto loaded = LoadConfig(options);
      ASSERT_TRUE(loaded.ok()) << knob.name << ": " << loaded.status().message();
      EXPECT_EQ(knob.get(loaded->config), NonDefaultValue(knob)) << expected_source;
      EXPECT_EQ(loaded->SourceOf(knob.name).ToString(), expected_source);
    }
  }
}

TEST(ConfigLoaderTest, EveryKnobRejectsAnOutOfRangeFileValueWithKeyValueRangeAndLine) {
  for (const Knob& knob : Knobs()) {
    const std::string bad =
        knob.type == KnobType::kEnum ? "bogus" : std::to_string(knob.max_value + 1);
    ScratchDir dir;
    // Enums are TOML strings; numeric knobs TOML integers (which every numeric knob takes).
    const std::string toml_value = knob.type == KnobType::kEnum ? "\"" + bad + "\"" : bad;
    const std::string path =
        dir.Write("k.toml", "\n\n" + std::string(knob.name) + " = " + toml_value + "\n");
    const auto loaded = LoadConfig(FileOnly(path));
    ASSERT_FALSE(loaded.ok()) << knob.name;
    EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
    const std::string message = loaded.status().message();
    EXPECT_THAT(message, HasSubstr(path + ":3: " + std::string(knob.name)));
    EXPECT_THAT(message, HasSubstr("'" + bad + "'"));
    EXPECT_THAT(message, HasSubstr(FormatKnobRange(knob)));
  }
}

TEST(ConfigLoaderTest, ApplyTomlLeavesConfigUnchangedOnError) {
  Config config;
  config.pipeline_depth = 9;
  const Status status =
      ApplyToml("pipeline_depth = 3\nchunk_size = true\n", "pushed", config, nullptr);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("pushed:2"));
  EXPECT_THAT(status.message(), HasSubstr("got a boolean"));
  EXPECT_EQ(config.pipeline_depth, 9u);
}

}  // namespace
}  // namespace artune::transport
