// The tuner's enum names come from one table each (artune/base/enum_names.h):
// every name reads back as its value, and the texts users see (names, units,
// outcome texts, parse errors) are the ones the switches used to give.
#include <gtest/gtest.h>

#include <string>

#include "artune/base/enum_names.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/compare_report.h"
#include "artune/tuner/config_emit.h"
#include "artune/tuner/payload.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/trial.h"

namespace artune::tuner {
namespace {

TEST(EnumNames, TableLooksUpBothWaysAndListsInOrder) {
  enum class Colour { kRed, kGreen, kBlue };
  static constexpr std::array<EnumName<Colour>, 2> kNames = {{
      {Colour::kRed, "red"},
      {Colour::kGreen, "green"},
  }};
  EXPECT_EQ(NameOf(kNames, Colour::kGreen), "green");
  EXPECT_EQ(NameOf(kNames, Colour::kBlue), "?");
  EXPECT_EQ(NameOf(kNames, Colour::kBlue, "none"), "none");
  EXPECT_EQ(ValueNamed(kNames, "red"), Colour::kRed);
  EXPECT_EQ(ValueNamed(kNames, "Red"), std::nullopt);
  EXPECT_EQ(NameList(kNames), "red, green");
  EXPECT_EQ(NameList(kNames, " or "), "red or green");
}

TEST(EnumNames, ObjectivesRoundTripWithTheirUnits) {
  for (Objective objective : {Objective::kLatencyP50, Objective::kLatencyP99, Objective::kBandwidth,
                              Objective::kPsThroughput, Objective::kWorkloadTime}) {
    ASSERT_TRUE(ParseObjective(ObjectiveName(objective)).ok()) << ObjectiveName(objective);
    EXPECT_EQ(*ParseObjective(ObjectiveName(objective)), objective);
  }
  EXPECT_EQ(ObjectiveName(Objective::kPsThroughput), "ps-throughput");
  EXPECT_EQ(ObjectiveUnit(Objective::kLatencyP99), "us");
  EXPECT_EQ(ObjectiveUnit(Objective::kBandwidth), "MB/s");
  EXPECT_EQ(ObjectiveUnit(Objective::kPsThroughput), "RPC/s");
  EXPECT_EQ(ObjectiveUnit(Objective::kWorkloadTime), "s");
  EXPECT_EQ(ParseObjective("speed").status().message(),
            "objective \"speed\" is not one of latency-p50, latency-p99, bandwidth, "
            "ps-throughput, workload-time");
}

TEST(EnumNames, ParseErrorsListTheNames) {
  EXPECT_EQ(ParseScheme("zipf").status().message(),
            "unknown payload scheme 'zipf': use uniform, random or skew");
  EXPECT_EQ(*ParseScheme("SKEW"), Scheme::kSkew);  // schemes are read in any case
  EXPECT_EQ(ParseBenchmark("throughput").status().message(),
            "unknown benchmark 'throughput': use latency, bandwidth or ps");
  EXPECT_EQ(ParseConfigFormat("yaml").status().message(),
            "unknown config format 'yaml'; choose toml, env or json");
}

TEST(EnumNames, NamesAndOutcomeTexts) {
  EXPECT_EQ(BufferClassName(BufferClass::kMedium), "medium");
  EXPECT_EQ(SchemeName(Scheme::kRandom), "random");
  EXPECT_EQ(BenchmarkName(BenchmarkKind::kBandwidth), "bandwidth");
  EXPECT_EQ(ConfigFormatName(ConfigFormat::kEnv), "env");
  EXPECT_EQ(std::string(PairedOutcomeName(PairedOutcome::kWithinNoise)), "within_noise");
  EXPECT_EQ(std::string(PairedOutcomeName(PairedOutcome::kTooFewPairs)), "too_few_pairs");
  EXPECT_EQ(std::string(PairedOutcomeText(PairedOutcome::kSlower)),
            "the tuned config is slower beyond noise");
  EXPECT_EQ(std::string(PairedOutcomeText(PairedOutcome::kTooFewPairs)), "too few pairs to tell");
}

}  // namespace
}  // namespace artune::tuner
