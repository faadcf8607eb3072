// The size ranges and slice examples `artune config explain` prints, derived from
// protocol selection: bounds at each knob, the ranges a config leaves out, and
// examples that agree with ChooseSliceProtocol.
#include "artune/transport/protocol_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "protocol_test_util.h"

namespace artune::transport {
namespace {

TEST(ProtocolRangesTest, EveryProtocolWithBoundsAtTheKnobs) {
  const Config config = MakeConfig(16 << 10, 512 << 10, 4 << 10);
  const std::vector<ProtocolRange> ranges = ProtocolRanges(config);
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(ranges[0].protocol, Protocol::kEager);
  EXPECT_EQ(ranges[0].max_bytes, 16u << 10);
  EXPECT_EQ(ranges[1].protocol, Protocol::kCoalescedEager);
  EXPECT_EQ(ranges[1].max_bytes, 4u << 10);
  EXPECT_EQ(ranges[2].protocol, Protocol::kRendezvousRead);
  EXPECT_EQ(ranges[2].min_bytes, (16u << 10) + 1);
  EXPECT_EQ(ranges[2].max_bytes, 512u << 10);
  EXPECT_EQ(ranges[3].protocol, Protocol::kChunkedRendezvous);
  EXPECT_EQ(ranges[3].min_bytes, (512u << 10) + 1);
  EXPECT_FALSE(ranges[3].max_bytes.has_value());
  EXPECT_EQ(FormatProtocolRange(ranges[0]), "0 .. 16KiB");
  EXPECT_EQ(FormatProtocolRange(ranges[2]), "> 16KiB .. 512KiB");
  EXPECT_EQ(FormatProtocolRange(ranges[3]), "> 512KiB");
  for (const ProtocolRange& range : ranges) EXPECT_FALSE(range.how.empty());
}

TEST(ProtocolRangesTest, NoCoalescingAndNoSingleReadWhenTheKnobsLeaveNone) {
  // coalesce_limit 0 turns coalescing off; a chunk no larger than the eager
  // threshold leaves no size for a single rendezvous read.
  const std::vector<ProtocolRange> ranges = ProtocolRanges(MakeConfig(64 << 10, 32 << 10, 0));
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].protocol, Protocol::kEager);
  EXPECT_EQ(ranges[1].protocol, Protocol::kChunkedRendezvous);
  EXPECT_EQ(ranges[1].min_bytes, (64u << 10) + 1);
}

TEST(ProtocolRangesTest, ExamplesAgreeWithSliceSelection) {
  const Config config = MakeConfig(16 << 10, 512 << 10, 4 << 10);
  const std::vector<uint64_t> sizes = ExampleSliceSizes(config);
  EXPECT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
  EXPECT_EQ(std::adjacent_find(sizes.begin(), sizes.end()), sizes.end());
  for (uint64_t bytes : {uint64_t{16 << 10}, uint64_t{(16 << 10) + 1}, uint64_t{512 << 10},
                         uint64_t{(512 << 10) + 1}}) {
    EXPECT_NE(std::find(sizes.begin(), sizes.end(), bytes), sizes.end()) << bytes;
  }
  for (uint64_t bytes : sizes) {
    EXPECT_EQ(ExplainSlice(bytes, config).protocol, ChooseSliceProtocol(bytes, config)) << bytes;
  }
  const SliceExample eager = ExplainSlice(10, config);
  EXPECT_EQ(eager.chunks, 0u);
  EXPECT_EQ(eager.rounds, 0u);
  const SliceExample one_read = ExplainSlice(100 << 10, config);
  EXPECT_EQ(one_read.chunks, 1u);
  EXPECT_EQ(one_read.rounds, 1u);
  // 10 MiB in 512 KiB chunks: 20 reads, 4 in flight -> 5 rounds.
  const SliceExample chunked = ExplainSlice(10 << 20, config);
  EXPECT_EQ(chunked.protocol, Protocol::kChunkedRendezvous);
  EXPECT_EQ(chunked.chunks, 20u);
  EXPECT_EQ(chunked.rounds, 5u);
}

}  // namespace
}  // namespace artune::transport
