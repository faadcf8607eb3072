// --knob parsing: geometric ladders, lists, units, and errors that say what to do.
#include "artune/tuner/search_space.h"

#include <gtest/gtest.h>

namespace artune::tuner {
namespace {

std::string ErrorOf(std::string_view spec) {
  Result<KnobAxis> axis = ParseKnobAxis(spec);
  EXPECT_FALSE(axis.ok()) << spec;
  return axis.ok() ? "" : axis.status().message();
}

TEST(SearchSpace, GeometricLadderWithUnits) {
  auto axis = ParseKnobAxis("eager_threshold=256B..4KiB:x2");
  ASSERT_TRUE(axis.ok()) << axis.status().ToString();
  EXPECT_EQ(axis->values, (std::vector<uint64_t>{256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(axis->spec, "eager_threshold=256..4KiB:x2");
  EXPECT_EQ(axis->ValueText(4), "4KiB");
  auto by_four = ParseKnobAxis("chunk_size=16KiB..4MiB:x4");
  ASSERT_TRUE(by_four.ok()) << by_four.status().ToString();
  EXPECT_EQ(by_four->values.size(), 5u);  // 16K 64K 256K 1M 4M
}

TEST(SearchSpace, ListIsSortedAndAcceptsUnitsAndCounts) {
  auto axis = ParseKnobAxis("chunk_size=1MiB, 64KiB,256KiB");
  ASSERT_TRUE(axis.ok()) << axis.status().ToString();
  EXPECT_EQ(axis->values, (std::vector<uint64_t>{65536, 262144, 1048576}));
  EXPECT_EQ(axis->spec, "chunk_size=64KiB,256KiB,1MiB");
  auto depth = ParseKnobAxis("pipeline_depth=1,2,8");
  ASSERT_TRUE(depth.ok()) << depth.status().ToString();
  EXPECT_EQ(depth->values, (std::vector<uint64_t>{1, 2, 8}));
  auto polling = ParseKnobAxis("polling=busy,event");
  ASSERT_TRUE(polling.ok()) << polling.status().ToString();
  EXPECT_EQ(polling->values.size(), 2u);
}

TEST(SearchSpace, ErrorsNameKnobValueRangeAndFix) {
  std::string message = ErrorOf("eager_treshold=1KiB,2KiB");
  EXPECT_NE(message.find("eager_treshold"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean eager_threshold"), std::string::npos) << message;

  message = ErrorOf("eager_threshold=256B..64MiB:x2");  // past the knob's range
  EXPECT_NE(message.find("eager_threshold"), std::string::npos) << message;
  EXPECT_NE(message.find("64MiB"), std::string::npos) << message;
  EXPECT_NE(message.find("1MiB"), std::string::npos) << message;  // the range's end

  message = ErrorOf("chunk_size=16KiB..100KiB:x2");  // off the ladder
  EXPECT_NE(message.find("64KiB or 128KiB"), std::string::npos) << message;

  message = ErrorOf("chunk_size=16KiB..1MiB:x1");
  EXPECT_NE(message.find("x2"), std::string::npos) << message;
  message = ErrorOf("chunk_size=16KiB..1MiB");
  EXPECT_NE(message.find("growth factor"), std::string::npos) << message;
  message = ErrorOf("chunk_size=1MiB..16KiB:x2");
  EXPECT_NE(message.find("swap"), std::string::npos) << message;
  message = ErrorOf("chunk_size=64KiB,64KiB");
  EXPECT_NE(message.find("twice"), std::string::npos) << message;
  message = ErrorOf("chunk_size=64KiB,,1MiB");
  EXPECT_NE(message.find("empty value"), std::string::npos) << message;
  message = ErrorOf("chunk_size");
  EXPECT_NE(message.find("NAME=LO..HI:xF"), std::string::npos) << message;
  message = ErrorOf("fabric=tcp,verbs");
  EXPECT_NE(message.find("--fabric"), std::string::npos) << message;
  // Fixed when a transport starts: a trial could not change them.
  for (const char* spec : {"verbs_mtu=1024,4096", "verbs_inline_size=0,128",
                           "verbs_qp_timeout=14,17", "verbs_retry_count=3,7"}) {
    message = ErrorOf(spec);
    EXPECT_NE(message.find("set when a transport starts"), std::string::npos) << message;
    EXPECT_NE(message.find("--set verbs_"), std::string::npos) << message;
  }
  message = ErrorOf("eager_threshold=0..4KiB:x2");
  EXPECT_NE(message.find("cannot start at 0"), std::string::npos) << message;
  message = ErrorOf("chunk_size=12 apples");
  EXPECT_NE(message.find("chunk_size"), std::string::npos) << message;
}

TEST(SearchSpace, DefaultBracketsTheCrossovers) {
  SearchSpace space = DefaultSearchSpace();
  ASSERT_EQ(space.axes.size(), 2u);
  EXPECT_EQ(space.axes[0].name(), "eager_threshold");
  EXPECT_EQ(space.axes[0].values.front(), 256u);
  EXPECT_EQ(space.axes[0].values.back(), 256u * 1024);
  EXPECT_EQ(space.axes[1].name(), "chunk_size");
  EXPECT_EQ(space.axes[1].values.front(), 16u * 1024);
  EXPECT_EQ(space.axes[1].values.back(), 4u * 1024 * 1024);
  EXPECT_EQ(space.GridSize(), 11u * 9u);
  auto parsed = ParseSearchSpace({});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Canonical(), space.Canonical());
}

TEST(SearchSpace, PointsMapToKnobsConfigsAndBack) {
  std::vector<std::string> specs = {"eager_threshold=1KiB..16KiB:x4", "chunk_size=64KiB,1MiB"};
  auto space = ParseSearchSpace(specs);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_EQ(space->GridSize(), 6u);
  Point point = {1, 1};
  auto knobs = space->KnobValues(point);
  EXPECT_EQ(knobs.at("eager_threshold"), "4KiB");
  EXPECT_EQ(knobs.at("chunk_size"), "1MiB");
  transport::Config config = space->Apply(point, transport::Config{});
  EXPECT_EQ(config.eager_threshold, 4096u);
  EXPECT_EQ(config.chunk_size, 1048576u);
  EXPECT_EQ(space->Nearest(config), point);
  transport::Config defaults;  // 16 KiB eager, 512 KiB chunks
  EXPECT_EQ(space->Nearest(defaults), (Point{2, 1}));
}

TEST(SearchSpace, RepeatedKnobAndHugeGridsAreRefused) {
  std::vector<std::string> twice = {"chunk_size=64KiB", "chunk_size=1MiB"};
  auto repeated = ParseSearchSpace(twice);
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("swept twice"), std::string::npos);
  std::vector<std::string> huge = {"eager_threshold=1..1MiB:x2", "chunk_size=4KiB..64MiB:x2",
                                   "pipeline_depth=1..64:x2", "timeout_ms=1000,2000"};
  auto refused = ParseSearchSpace(huge);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("coarser"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace artune::tuner
