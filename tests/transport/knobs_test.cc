// The knob table: declarations, parsing, errors, formatting, validation.
#include "artune/transport/knobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

namespace artune::transport {
namespace {

using ::testing::HasSubstr;

TEST(KnobTableTest, EveryKnobIsDeclaredConsistently) {
  std::set<std::string_view> names;
  for (const Knob& knob : Knobs()) {
    EXPECT_TRUE(names.insert(knob.name).second) << "duplicate " << knob.name;
    std::string expected_env = "ARTUNE_";
    for (char c : knob.name) expected_env += static_cast<char>(std::toupper(c));
    EXPECT_EQ(knob.env_name, expected_env);
    EXPECT_FALSE(knob.doc.empty()) << knob.name;
    EXPECT_LE(knob.min_value, knob.max_value) << knob.name;
    const uint64_t default_value = knob.DefaultValue();
    EXPECT_GE(default_value, knob.min_value) << knob.name;
    EXPECT_LE(default_value, knob.max_value) << knob.name;
    if (knob.type == KnobType::kEnum) {
      EXPECT_EQ(knob.max_value + 1, knob.choices.size()) << knob.name;
    } else {
      EXPECT_TRUE(knob.choices.empty()) << knob.name;
    }
    EXPECT_EQ(FindKnob(knob.name), &knob);
    EXPECT_EQ(FindKnobByEnvName(knob.env_name), &knob);
  }
  for (std::string_view required :
       {"eager_threshold", "chunk_size", "pipeline_depth", "coalesce_limit", "max_outstanding",
        "eager_buffer_count", "fabric", "polling", "timeout_ms"}) {
    EXPECT_NE(FindKnob(required), nullptr) << required;
  }
  EXPECT_EQ(FindKnob("no_such_knob"), nullptr);
  EXPECT_EQ(FindKnobByEnvName("ARTUNE_CONFIG"), nullptr);
}

TEST(KnobTableTest, DefaultsComeFromConfig) {
  const Config defaults;
  EXPECT_EQ(FindKnob("eager_threshold")->DefaultValue(), defaults.eager_threshold);
  EXPECT_EQ(FindKnob("chunk_size")->DefaultValue(), defaults.chunk_size);
  EXPECT_EQ(FormatKnob(defaults, "fabric"), "auto");
  EXPECT_EQ(FormatKnob(defaults, "polling"), "adaptive");
  EXPECT_TRUE(ValidateConfig(defaults).ok());
}

TEST(SetKnobTest, ParsesByteUnits) {
  Config config;
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  for (const Case& c :
       {Case{"4096", 4096}, Case{"4096B", 4096}, Case{"16K", 16384}, Case{"16k", 16384},
        Case{"16KB", 16384}, Case{"16KiB", 16384}, Case{" 32 kib ", 32768}, Case{"1M", 1 << 20},
        Case{"1MiB", 1 << 20}, Case{"0", 0}}) {
    ASSERT_TRUE(SetKnob(config, "eager_threshold", c.text).ok()) << c.text;
    EXPECT_EQ(config.eager_threshold, c.bytes) << c.text;
  }
  ASSERT_TRUE(SetKnob(config, "chunk_size", "64MiB").ok());
  EXPECT_EQ(config.chunk_size, uint64_t{64} << 20);
}

TEST(SetKnobTest, ParsesCountsDurationsAndEnums) {
  Config config;
  ASSERT_TRUE(SetKnob(config, "pipeline_depth", "8").ok());
  EXPECT_EQ(config.pipeline_depth, 8u);
  ASSERT_TRUE(SetKnob(config, "timeout_ms", "2s").ok());
  EXPECT_EQ(config.timeout_ms, 2000u);
  ASSERT_TRUE(SetKnob(config, "timeout_ms", "250ms").ok());
  EXPECT_EQ(config.timeout_ms, 250u);
  ASSERT_TRUE(SetKnob(config, "fabric", "tcp").ok());
  EXPECT_EQ(config.fabric, FabricKind::kTcp);
  ASSERT_TRUE(SetKnob(config, "fabric", "VERBS").ok());
  EXPECT_EQ(config.fabric, FabricKind::kVerbs);
  ASSERT_TRUE(SetKnob(config, "polling", "busy").ok());
  EXPECT_EQ(config.polling, PollingMode::kBusy);
}

TEST(SetKnobTest, ErrorsNameKnobValueAndRange) {
  Config config;
  const Config before = config;

  Status status = SetKnob(config, "eager_threshold", "2MiB");
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("eager_threshold"));
  EXPECT_THAT(status.message(), HasSubstr("'2MiB'"));
  EXPECT_THAT(status.message(), HasSubstr("0 .. 1MiB"));

  status = SetKnob(config, "chunk_size", "4095");
  EXPECT_THAT(status.message(), HasSubstr("chunk_size"));
  EXPECT_THAT(status.message(), HasSubstr("4KiB .. 64MiB"));

  status = SetKnob(config, "pipeline_depth", "0");
  EXPECT_THAT(status.message(), HasSubstr("'0'"));
  EXPECT_THAT(status.message(), HasSubstr("1 .. 64"));

  status = SetKnob(config, "pipeline_depth", "-3");
  EXPECT_THAT(status.message(), HasSubstr("negative"));

  status = SetKnob(config, "pipeline_depth", "4KiB");
  EXPECT_THAT(status.message(), HasSubstr("unknown unit 'kib'"));

  status = SetKnob(config, "eager_threshold", "lots");
  EXPECT_THAT(status.message(), HasSubstr("'lots'"));

  status = SetKnob(config, "eager_threshold", "99999999999999999999999");
  EXPECT_THAT(status.message(), HasSubstr("too large"));

  status = SetKnob(config, "eager_threshold", "99999999999999GiB");
  EXPECT_THAT(status.message(), HasSubstr("too large"));

  status = SetKnob(config, "fabric", "infiniband");
  EXPECT_THAT(status.message(), HasSubstr("fabric"));
  EXPECT_THAT(status.message(), HasSubstr("'infiniband'"));
  EXPECT_THAT(status.message(), HasSubstr("tcp|verbs|auto"));

  status = SetKnob(config, "eager_treshold", "1");
  EXPECT_THAT(status.message(), HasSubstr("unknown knob 'eager_treshold'"));
  EXPECT_THAT(status.message(), HasSubstr("eager_threshold"));

  // A failed SetKnob leaves the config as it was.
  EXPECT_EQ(ConfigToMap(config), ConfigToMap(before));
}

TEST(FormatKnobTest, FormatsWithTheLargestExactUnitAndParsesBack) {
  Config config;
  config.eager_threshold = 1000;
  config.chunk_size = 3 * 1024 * 1024;
  config.coalesce_limit = 0;
  EXPECT_EQ(FormatKnob(config, "eager_threshold"), "1000");
  EXPECT_EQ(FormatKnob(config, "chunk_size"), "3MiB");
  EXPECT_EQ(FormatKnob(config, "coalesce_limit"), "0");
  EXPECT_EQ(FormatKnob(config, "timeout_ms"), "10000");
  EXPECT_EQ(FormatKnob(config, "nonexistent"), "");
  Config parsed;
  for (const auto& [name, text] : ConfigToMap(config)) {
    ASSERT_TRUE(SetKnob(parsed, name, text).ok()) << name << "=" << text;
  }
  EXPECT_EQ(ConfigToMap(parsed), ConfigToMap(config));
}

TEST(ConfigToMapTest, HasEveryKnob) {
  const auto values = ConfigToMap(Config{});
  EXPECT_EQ(values.size(), Knobs().size());
  EXPECT_EQ(values.at("eager_threshold"), "16KiB");
  EXPECT_EQ(values.at("chunk_size"), "512KiB");
}

TEST(ValidateConfigTest, RejectsOutOfRangeFields) {
  Config config;
  config.pipeline_depth = 0;
  Status status = ValidateConfig(config);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("pipeline_depth"));
  EXPECT_THAT(status.message(), HasSubstr("1 .. 64"));

  config = Config{};
  config.fabric = static_cast<FabricKind>(7);
  EXPECT_THAT(ValidateConfig(config).message(), HasSubstr("tcp|verbs|auto"));
}

TEST(ValidateConfigTest, AcceptsChunkSmallerThanEagerThreshold) {
  Config config;
  config.eager_threshold = 64 * 1024;
  config.chunk_size = 4 * 1024;
  EXPECT_TRUE(ValidateConfig(config).ok());
}

TEST(ValidateConfigTest, RejectsAnEagerPoolPastTheLimit) {
  Config config;
  config.eager_threshold = 1 << 20;
  config.eager_buffer_count = 1024;  // 1024 x (1 MiB + header) > 1 GiB
  const Status status = ValidateConfig(config);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("eager_buffer_count"));
  config.eager_buffer_count = 1023;  // 1023 x (1 MiB + 1 KiB) < 1 GiB
  EXPECT_TRUE(ValidateConfig(config).ok()) << ValidateConfig(config).message();
}

TEST(EagerBufferBytesTest, LargestEagerPayloadPlusHeader) {
  Config config;
  config.eager_threshold = 8192;
  config.coalesce_limit = 4096;
  EXPECT_EQ(EagerBufferBytes(config), 8192 + kEagerPacketHeaderBytes);
  config.coalesce_limit = 32768;
  EXPECT_EQ(EagerBufferBytes(config), 32768 + kEagerPacketHeaderBytes);
}

}  // namespace
}  // namespace artune::transport
