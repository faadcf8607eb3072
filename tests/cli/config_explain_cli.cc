// artune config explain: the protocol each slice size gets under the knobs, and how
// many rounds of chunk reads a rendezvous slice takes (pipeline_depth at a time;
// tcp asks for every chunk at once, Endpoint::streams_reads).
#include <string>

#include "apply_cli_fixture.h"

namespace artune_cli_test {
namespace {

using ConfigExplainTest = ApplyCliTest;

// The example row of a slice of `bytes`, or null when explain shows none.
json Example(const json& explained, uint64_t bytes) {
  for (const json& example : explained.at("examples")) {
    if (example.at("bytes") == bytes) return example;
  }
  return nullptr;
}

TEST_F(ConfigExplainTest, NamesTheProtocolOfEachSliceSize) {
  const Outcome o = Run(
      "config explain --set eager_threshold=16KiB --set chunk_size=512KiB --set fabric=shm "
      "--json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json explained = json::parse(o.out);
  EXPECT_EQ(Example(explained, 10).at("protocol"), "eager");
  EXPECT_EQ(Example(explained, 16384).at("protocol"), "eager");
  EXPECT_EQ(Example(explained, 16385).at("protocol"), "rendezvous-read");
  EXPECT_EQ(Example(explained, 524288).at("chunks"), 1);
  const json ten_mib = Example(explained, 10 << 20);
  EXPECT_EQ(ten_mib.at("protocol"), "chunked-rendezvous");
  EXPECT_EQ(ten_mib.at("chunks"), 20);
}

TEST_F(ConfigExplainTest, PipelineRoundsFollowTheDepthExceptOnTcp) {
  const std::string knobs = "--set chunk_size=512KiB --set pipeline_depth=4 ";
  Outcome o = Run("config explain " + knobs + "--set fabric=shm --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(Example(json::parse(o.out), 10 << 20).at("pipeline_rounds"), 5);  // 20 chunks / 4

  o = Run("config explain " + knobs + "--set fabric=tcp --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(Example(json::parse(o.out), 10 << 20).at("pipeline_rounds"), 1);

  o = Run("config explain " + knobs + "--set fabric=tcp");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("all asked for at once"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace artune_cli_test
