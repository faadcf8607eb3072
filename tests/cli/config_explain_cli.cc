// artune config explain: the protocol each slice size gets under the knobs, and how
// many rounds of chunk reads a rendezvous slice takes (pipeline_depth at a time).
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
  const Outcome o =
      Run("config explain --set eager_threshold=16KiB --set chunk_size=512KiB --set fabric=shm "
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

TEST_F(ConfigExplainTest, PipelineRoundsFollowTheDepth) {
  for (const char* depth : {"4", "16"}) {
    const Outcome o = Run(std::string("config explain --set chunk_size=512KiB --json ") +
                          "--set pipeline_depth=" + depth);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    // 10 MiB in 512 KiB chunks: 20 reads, 4 or 16 at a time.
    EXPECT_EQ(Example(json::parse(o.out), 10 << 20).at("pipeline_rounds"),
              std::string(depth) == "4" ? 5 : 2);
  }
  const Outcome o = Run("config explain --set chunk_size=512KiB --set pipeline_depth=4");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("512KiB chunks, 4 reads in flight"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace artune_cli_test
