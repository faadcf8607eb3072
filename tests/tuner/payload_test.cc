#include "artune/tuner/payload.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "artune/tuner/checksum.h"

namespace artune::tuner {
namespace {

PayloadSpec Spec(Scheme scheme, std::vector<BufferClass> classes, uint32_t buffers = 10) {
  PayloadSpec spec;
  spec.scheme = scheme;
  spec.classes = std::move(classes);
  spec.buffer_count = buffers;
  return spec;
}

TEST(PayloadTest, ClassRangesFollowTfGrpcBench) {
  EXPECT_EQ(RangeOf(BufferClass::kSmall).min_bytes, 1u);
  EXPECT_EQ(RangeOf(BufferClass::kSmall).max_bytes, 1023u);
  EXPECT_EQ(RangeOf(BufferClass::kMedium).min_bytes, 1024u);
  EXPECT_EQ(RangeOf(BufferClass::kMedium).max_bytes, 1024u * 1024 - 1);
  EXPECT_EQ(RangeOf(BufferClass::kLarge).min_bytes, 1024u * 1024);
  EXPECT_EQ(RangeOf(BufferClass::kLarge).max_bytes, 10u * 1024 * 1024);
}

TEST(PayloadTest, ClassifySizeAtEveryBoundary) {
  EXPECT_EQ(*ClassifySize(1), BufferClass::kSmall);
  EXPECT_EQ(*ClassifySize(1023), BufferClass::kSmall);
  EXPECT_EQ(*ClassifySize(1024), BufferClass::kMedium);
  EXPECT_EQ(*ClassifySize(1024 * 1024 - 1), BufferClass::kMedium);
  EXPECT_EQ(*ClassifySize(1024 * 1024), BufferClass::kLarge);
  EXPECT_EQ(*ClassifySize(10 * 1024 * 1024), BufferClass::kLarge);
  EXPECT_FALSE(ClassifySize(0).ok());
  EXPECT_FALSE(ClassifySize(10 * 1024 * 1024 + 1).ok());
}

TEST(PayloadTest, DefaultsAreTfGrpcBenchDefaults) {
  PayloadSpec spec;
  EXPECT_EQ(spec.buffer_count, 10u);
  EXPECT_EQ(spec.class_bytes[0], 10u);
  EXPECT_EQ(spec.class_bytes[1], 10u * 1024);
  EXPECT_EQ(spec.class_bytes[2], 1024u * 1024);
  EXPECT_EQ(FormatSkewWeights(spec.skew), "10,30,60");
}

TEST(PayloadTest, UniformSmallIsTenBuffersOfTenBytes) {
  auto layout = PlanPayload(Spec(Scheme::kUniform, {BufferClass::kSmall}));
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->sizes, std::vector<uint64_t>(10, 10));
  EXPECT_EQ(layout->total_bytes, 100u);
}

TEST(PayloadTest, UniformOverSeveralClassesSplitsEvenlyRoundRobin) {
  auto layout = PlanPayload(
      Spec(Scheme::kUniform, {BufferClass::kSmall, BufferClass::kMedium, BufferClass::kLarge}, 9));
  ASSERT_TRUE(layout.ok());
  auto counts = CountByClass(*layout);
  EXPECT_EQ(counts[0], 3u);
  EXPECT_EQ(counts[1], 3u);
  EXPECT_EQ(counts[2], 3u);
  EXPECT_EQ(layout->classes[0], BufferClass::kSmall);
  EXPECT_EQ(layout->classes[1], BufferClass::kMedium);
  EXPECT_EQ(layout->classes[2], BufferClass::kLarge);
}

TEST(PayloadTest, RandomNeedsAtLeastTwoClasses) {
  auto layout = PlanPayload(Spec(Scheme::kRandom, {BufferClass::kMedium}));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find("at least two"), std::string::npos);
}

TEST(PayloadTest, RandomUsesOnlyChosenClassesAndEachAtLeastOnce) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PayloadSpec spec = Spec(Scheme::kRandom, {BufferClass::kSmall, BufferClass::kLarge});
    spec.seed = seed;
    auto layout = PlanPayload(spec);
    ASSERT_TRUE(layout.ok());
    auto counts = CountByClass(*layout);
    EXPECT_GE(counts[0], 1u);
    EXPECT_EQ(counts[1], 0u);
    EXPECT_GE(counts[2], 1u);
    EXPECT_EQ(counts[0] + counts[2], 10u);
  }
}

TEST(PayloadTest, RandomPlacementDependsOnSeed) {
  PayloadSpec spec =
      Spec(Scheme::kRandom, {BufferClass::kSmall, BufferClass::kMedium, BufferClass::kLarge});
  std::vector<std::vector<BufferClass>> orders;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    spec.seed = seed;
    orders.push_back(PlanPayload(spec)->classes);
  }
  std::sort(orders.begin(), orders.end());
  EXPECT_GT(std::unique(orders.begin(), orders.end()) - orders.begin(), 1);
}

TEST(PayloadTest, SkewDefaultIsSixtyThirtyTen) {
  auto layout = PlanPayload(Spec(Scheme::kSkew, {}, 10));
  ASSERT_TRUE(layout.ok());
  auto counts = CountByClass(*layout);
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 3u);
  EXPECT_EQ(counts[2], 6u);

  auto hundred = CountByClass(*PlanPayload(Spec(Scheme::kSkew, {}, 100)));
  EXPECT_EQ(hundred[0], 10u);
  EXPECT_EQ(hundred[1], 30u);
  EXPECT_EQ(hundred[2], 60u);
}

TEST(PayloadTest, SkewBiasIsSelectable) {
  PayloadSpec spec = Spec(Scheme::kSkew, {}, 10);
  spec.skew = *ParseSkewWeights("small");
  auto counts = CountByClass(*PlanPayload(spec));
  EXPECT_EQ(counts[0], 6u);
  EXPECT_EQ(counts[1], 3u);
  EXPECT_EQ(counts[2], 1u);

  spec.skew = *ParseSkewWeights("0,50,50");
  counts = CountByClass(*PlanPayload(spec));
  EXPECT_EQ(counts[0], 0u);
  EXPECT_EQ(counts[1], 5u);
  EXPECT_EQ(counts[2], 5u);

  spec.skew = *ParseSkewWeights("0,0,0");
  EXPECT_FALSE(PlanPayload(spec).ok());
  EXPECT_FALSE(ParseSkewWeights("1,2").ok());
  EXPECT_FALSE(ParseSkewWeights("a,b,c").ok());
}

TEST(PayloadTest, EveryValueIsAdjustable) {
  PayloadSpec spec = Spec(Scheme::kUniform, {BufferClass::kSmall, BufferClass::kMedium}, 4);
  spec.class_bytes = {100, 4096, 2 * 1024 * 1024};
  auto layout = PlanPayload(spec);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->sizes, (std::vector<uint64_t>{100, 4096, 100, 4096}));

  spec.size_mode = SizeMode::kRandomInClass;
  layout = PlanPayload(spec);
  ASSERT_TRUE(layout.ok());
  for (size_t i = 0; i < layout->sizes.size(); ++i) {
    ClassRange range = RangeOf(layout->classes[i]);
    EXPECT_GE(layout->sizes[i], range.min_bytes);
    EXPECT_LE(layout->sizes[i], range.max_bytes);
  }
}

TEST(PayloadTest, RejectsBadSpecs) {
  PayloadSpec spec;
  spec.class_bytes[0] = 1024;  // not a Small size
  EXPECT_NE(ValidateSpec(spec).message().find("small buffer size 1024"), std::string::npos);
  spec = PayloadSpec{};
  spec.class_bytes[2] = 11 * 1024 * 1024;
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec = PayloadSpec{};
  spec.buffer_count = 0;
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec.buffer_count = kMaxBuffers + 1;
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec = Spec(Scheme::kUniform, {});
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec = Spec(Scheme::kUniform, {BufferClass::kSmall, BufferClass::kSmall});
  EXPECT_FALSE(ValidateSpec(spec).ok());
}

TEST(PayloadTest, ParsesClassLists) {
  auto classes = ParseClasses("S,m,Large");
  ASSERT_TRUE(classes.ok());
  EXPECT_EQ(*classes, (std::vector<BufferClass>{BufferClass::kSmall, BufferClass::kMedium,
                                                BufferClass::kLarge}));
  EXPECT_EQ(FormatClasses(*classes), "S,M,L");
  EXPECT_FALSE(ParseClasses("S,X").ok());
  EXPECT_FALSE(ParseClasses("S,S").ok());
  EXPECT_FALSE(ParseClasses("").ok());
  EXPECT_EQ(*ParseScheme("skew"), Scheme::kSkew);
  EXPECT_FALSE(ParseScheme("zipf").ok());
}

TEST(PayloadTest, SameSeedSameBytesOtherSeedOtherBytes) {
  PayloadSpec spec = Spec(Scheme::kSkew, {}, 10);
  spec.class_bytes[2] = 1024 * 1024 + 3;  // a tail that is not a whole word
  auto a = GeneratePayload(spec);
  auto b = GeneratePayload(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->buffer_count(), b->buffer_count());
  for (size_t i = 0; i < a->buffer_count(); ++i) {
    ASSERT_TRUE(std::equal(a->buffer(i).begin(), a->buffer(i).end(), b->buffer(i).begin(),
                           b->buffer(i).end()));
    EXPECT_EQ(a->buffer_checksums()[i], Checksum(a->buffer(i)));
  }
  EXPECT_EQ(a->stream_checksum(), b->stream_checksum());

  spec.seed = 2;
  auto c = GeneratePayload(spec);
  EXPECT_NE(a->stream_checksum(), c->stream_checksum());
}

TEST(PayloadTest, BuffersOfOnePayloadDiffer) {
  auto payload = GeneratePayload(Spec(Scheme::kUniform, {BufferClass::kMedium}, 3));
  ASSERT_TRUE(payload.ok());
  EXPECT_NE(payload->buffer_checksums()[0], payload->buffer_checksums()[1]);
  EXPECT_NE(payload->buffer_checksums()[1], payload->buffer_checksums()[2]);
}

}  // namespace
}  // namespace artune::tuner
