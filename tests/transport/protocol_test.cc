// Protocol selection at and around every boundary, coalescing and chunking
// arithmetic, log2 buckets.
#include "artune/transport/protocol.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "artune/transport/knobs.h"
#include "protocol_test_util.h"

namespace artune::transport {
namespace {

TEST(ProtocolTest, NamesAndDescriptionsAreDistinctAndNonEmpty) {
  std::set<std::string_view> names;
  for (int i = 0; i < kProtocolCount; ++i) {
    const auto protocol = static_cast<Protocol>(i);
    EXPECT_FALSE(ProtocolDescription(protocol).empty());
    EXPECT_NE(ProtocolName(protocol), "unknown");
    names.insert(ProtocolName(protocol));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kProtocolCount));
  EXPECT_EQ(ProtocolName(Protocol::kEager), "eager");
  EXPECT_EQ(ProtocolName(Protocol::kCoalescedEager), "coalesced-eager");
  EXPECT_EQ(ProtocolName(Protocol::kRendezvousRead), "rendezvous-read");
  EXPECT_EQ(ProtocolName(Protocol::kChunkedRendezvous), "chunked-rendezvous");
}

TEST(ProtocolTest, EagerThresholdBoundary) {
  const Config config = MakeConfig(16384, 524288, 16384);
  EXPECT_EQ(ChooseSliceProtocol(0, config), Protocol::kEager);
  EXPECT_EQ(ChooseSliceProtocol(16383, config), Protocol::kEager);
  EXPECT_EQ(ChooseSliceProtocol(16384, config), Protocol::kEager);
  EXPECT_EQ(ChooseSliceProtocol(16385, config), Protocol::kRendezvousRead);
}

TEST(ProtocolTest, ChunkSizeBoundary) {
  const Config config = MakeConfig(16384, 524288, 16384);
  EXPECT_EQ(ChooseSliceProtocol(524287, config), Protocol::kRendezvousRead);
  EXPECT_EQ(ChooseSliceProtocol(524288, config), Protocol::kRendezvousRead);
  EXPECT_EQ(ChooseSliceProtocol(524289, config), Protocol::kChunkedRendezvous);
}

TEST(ProtocolTest, ZeroEagerThresholdSendsOnlyEmptySlicesEagerly) {
  const Config config = MakeConfig(0, 4096, 0);
  EXPECT_EQ(ChooseSliceProtocol(0, config), Protocol::kEager);
  EXPECT_EQ(ChooseSliceProtocol(1, config), Protocol::kRendezvousRead);
}

TEST(ProtocolTest, ChunkSmallerThanEagerThresholdSkipsPlainRendezvous) {
  const Config config = MakeConfig(65536, 4096, 0);
  EXPECT_EQ(ChooseSliceProtocol(65536, config), Protocol::kEager);
  EXPECT_EQ(ChooseSliceProtocol(65537, config), Protocol::kChunkedRendezvous);
}

TEST(PlanMessageTest, CoalescesSmallSlicesUpToTheLimit) {
  const Config config = MakeConfig(16384, 524288, 100);
  // 40 + 40 + 20 = 100 fits exactly; the next 1 overflows and opens a new packet.
  const std::vector<uint64_t> sizes = {40, 40, 20, 1, 99, 2};
  const MessagePlan plan = PlanMessage(sizes, config);
  ASSERT_EQ(plan.eager_packets.size(), 3u);
  EXPECT_TRUE(plan.rendezvous.empty());
  EXPECT_EQ(plan.eager_packets[0].slice_indices, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(plan.eager_packets[0].payload_bytes, 100u);
  EXPECT_EQ(plan.eager_packets[0].protocol, Protocol::kCoalescedEager);
  EXPECT_EQ(plan.eager_packets[1].slice_indices, (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(plan.eager_packets[1].payload_bytes, 100u);
  EXPECT_EQ(plan.eager_packets[2].slice_indices, (std::vector<uint32_t>{5}));
  EXPECT_EQ(plan.eager_packets[2].payload_bytes, 2u);
  EXPECT_EQ(plan.eager_packets[2].protocol, Protocol::kEager);
}

TEST(PlanMessageTest, SliceAboveCoalesceLimitGoesAloneAsEager) {
  const Config config = MakeConfig(16384, 524288, 1024);
  const std::vector<uint64_t> sizes = {10, 1025, 10, 10};
  const MessagePlan plan = PlanMessage(sizes, config);
  ASSERT_EQ(plan.eager_packets.size(), 3u);
  EXPECT_EQ(plan.eager_packets[0].slice_indices, (std::vector<uint32_t>{0}));
  EXPECT_EQ(plan.eager_packets[1].slice_indices, (std::vector<uint32_t>{1}));
  EXPECT_EQ(plan.eager_packets[1].protocol, Protocol::kEager);
  EXPECT_EQ(plan.eager_packets[1].payload_bytes, 1025u);
  EXPECT_EQ(plan.eager_packets[2].slice_indices, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(plan.eager_packets[2].protocol, Protocol::kCoalescedEager);
}

TEST(PlanMessageTest, RendezvousSlicesDoNotCloseTheOpenPacket) {
  const Config config = MakeConfig(1024, 4096, 1024);
  const std::vector<uint64_t> sizes = {8, 2000, 8, 10000, 8};
  const MessagePlan plan = PlanMessage(sizes, config);
  ASSERT_EQ(plan.eager_packets.size(), 1u);
  EXPECT_EQ(plan.eager_packets[0].slice_indices, (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_EQ(plan.eager_packets[0].payload_bytes, 24u);
  ASSERT_EQ(plan.rendezvous.size(), 2u);
  EXPECT_EQ(plan.rendezvous[0].slice_index, 1u);
  EXPECT_EQ(plan.rendezvous[0].protocol, Protocol::kRendezvousRead);
  EXPECT_EQ(plan.rendezvous[0].chunk_bytes, 2000u);
  EXPECT_EQ(plan.rendezvous[0].chunk_count, 1u);
  EXPECT_EQ(plan.rendezvous[1].slice_index, 3u);
  EXPECT_EQ(plan.rendezvous[1].protocol, Protocol::kChunkedRendezvous);
  EXPECT_EQ(plan.rendezvous[1].chunk_bytes, 4096u);
  EXPECT_EQ(plan.rendezvous[1].chunk_count, 3u);  // 4096 + 4096 + 1808
}

TEST(PlanMessageTest, ZeroLengthSlicesAreDeliveredInPackets) {
  const Config config = MakeConfig(16384, 524288, 16384);
  const std::vector<uint64_t> sizes = {0, 5, 0};
  const MessagePlan plan = PlanMessage(sizes, config);
  ASSERT_EQ(plan.eager_packets.size(), 1u);
  EXPECT_EQ(plan.eager_packets[0].slice_indices, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(plan.eager_packets[0].payload_bytes, 5u);
}

TEST(PlanMessageTest, ZeroCoalesceLimitDisablesCoalescing) {
  const Config config = MakeConfig(16384, 524288, 0);
  const std::vector<uint64_t> sizes = {0, 0, 7};
  const MessagePlan plan = PlanMessage(sizes, config);
  ASSERT_EQ(plan.eager_packets.size(), 3u);
  for (const EagerPacket& packet : plan.eager_packets) {
    EXPECT_EQ(packet.slice_indices.size(), 1u);
    EXPECT_EQ(packet.protocol, Protocol::kEager);
  }
}

TEST(PlanMessageTest, PacketSliceCountIsCapped) {
  const Config config = MakeConfig(16384, 524288, 16384);
  const std::vector<uint64_t> sizes(kMaxSlicesPerEagerPacket * 2 + 1, 1);
  const MessagePlan plan = PlanMessage(sizes, config);
  ASSERT_EQ(plan.eager_packets.size(), 3u);
  EXPECT_EQ(plan.eager_packets[0].slice_indices.size(), kMaxSlicesPerEagerPacket);
  EXPECT_EQ(plan.eager_packets[1].slice_indices.size(), kMaxSlicesPerEagerPacket);
  EXPECT_EQ(plan.eager_packets[2].slice_indices.size(), 1u);
}

TEST(PlanMessageTest, EverySliceAppearsExactlyOnceAndPacketsFitTheBuffer) {
  const Config config = MakeConfig(4096, 65536, 8192);
  const std::vector<uint64_t> sizes = {0,     1,    4095, 4096, 4097, 65535,   65536,
                                       65537, 3000, 3000, 3000, 10,   1 << 20, 0};
  const MessagePlan plan = PlanMessage(sizes, config);
  std::vector<int> seen(sizes.size(), 0);
  for (const EagerPacket& packet : plan.eager_packets) {
    uint64_t sum = 0;
    for (uint32_t index : packet.slice_indices) {
      ++seen[index];
      sum += sizes[index];
      EXPECT_EQ(ChooseSliceProtocol(sizes[index], config), Protocol::kEager);
    }
    EXPECT_EQ(sum, packet.payload_bytes);
    EXPECT_LE(packet.payload_bytes, EagerBufferBytes(config) - kEagerPacketHeaderBytes);
    EXPECT_EQ(packet.protocol,
              packet.slice_indices.size() > 1 ? Protocol::kCoalescedEager : Protocol::kEager);
  }
  for (const RendezvousTransfer& transfer : plan.rendezvous) {
    ++seen[transfer.slice_index];
    EXPECT_EQ(transfer.bytes, sizes[transfer.slice_index]);
    EXPECT_EQ(transfer.protocol, ChooseSliceProtocol(transfer.bytes, config));
    EXPECT_EQ(transfer.chunk_count, ChunkRanges(transfer.bytes, transfer.chunk_bytes).size());
  }
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(seen[i], 1) << "slice " << i;
}

TEST(PlanMessageTest, EmptyMessageHasEmptyPlan) {
  const MessagePlan plan = PlanMessage({}, Config{});
  EXPECT_TRUE(plan.eager_packets.empty());
  EXPECT_TRUE(plan.rendezvous.empty());
}

// A plan written into one reused MessagePlan, message after message of other
// shapes (more packets, fewer, none), equals the plan made afresh.
TEST(PlanMessageTest, APlanIntoAReusedPlanEqualsAFreshOne) {
  const Config config = MakeConfig(4096, 65536, 8192);
  const std::vector<std::vector<uint64_t>> messages = {
      {100}, {3000, 3000, 3000, 10, 1 << 20, 5000}, {}, {1 << 20}, {10, 10}, {0, 8192, 1}};
  MessagePlan reused;
  for (const auto& sizes : messages) {
    PlanMessage(sizes, config, reused);
    const MessagePlan fresh = PlanMessage(sizes, config);
    ASSERT_EQ(reused.eager_packets.size(), fresh.eager_packets.size());
    for (size_t i = 0; i < fresh.eager_packets.size(); ++i) {
      EXPECT_EQ(reused.eager_packets[i].slice_indices, fresh.eager_packets[i].slice_indices);
      EXPECT_EQ(reused.eager_packets[i].payload_bytes, fresh.eager_packets[i].payload_bytes);
      EXPECT_EQ(reused.eager_packets[i].protocol, fresh.eager_packets[i].protocol);
    }
    ASSERT_EQ(reused.rendezvous.size(), fresh.rendezvous.size());
    for (size_t i = 0; i < fresh.rendezvous.size(); ++i) {
      EXPECT_EQ(reused.rendezvous[i].slice_index, fresh.rendezvous[i].slice_index);
      EXPECT_EQ(reused.rendezvous[i].chunk_count, fresh.rendezvous[i].chunk_count);
    }
  }
}

TEST(ChunkRangesTest, CoverTheTransferContiguously) {
  for (uint64_t total : {uint64_t{1}, uint64_t{4095}, uint64_t{4096}, uint64_t{4097},
                         uint64_t{10} << 20, (uint64_t{10} << 20) + 3}) {
    const std::vector<ChunkRange> ranges = ChunkRanges(total, 4096);
    ASSERT_EQ(ranges.size(), (total + 4095) / 4096) << total;
    uint64_t expected_offset = 0;
    for (const ChunkRange& range : ranges) {
      EXPECT_EQ(range.offset, expected_offset);
      EXPECT_GT(range.length, 0u);
      EXPECT_LE(range.length, 4096u);
      expected_offset += range.length;
    }
    EXPECT_EQ(expected_offset, total);
  }
}

TEST(ChunkRangesTest, EdgeCases) {
  EXPECT_TRUE(ChunkRanges(0, 4096).empty());
  const std::vector<ChunkRange> one = ChunkRanges(100, 4096);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].length, 100u);
  const std::vector<ChunkRange> last = ChunkRanges(10000, 4096);
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[2].offset, 8192u);
  EXPECT_EQ(last[2].length, 1808u);
}

TEST(Log2BucketTest, Boundaries) {
  EXPECT_EQ(Log2Bucket(0), 0);
  EXPECT_EQ(Log2Bucket(1), 0);
  EXPECT_EQ(Log2Bucket(2), 1);
  EXPECT_EQ(Log2Bucket(3), 1);
  EXPECT_EQ(Log2Bucket(4), 2);
  EXPECT_EQ(Log2Bucket(1023), 9);
  EXPECT_EQ(Log2Bucket(1024), 10);
  EXPECT_EQ(Log2Bucket(1025), 10);
  EXPECT_EQ(Log2Bucket((uint64_t{1} << 20) - 1), 19);
  EXPECT_EQ(Log2Bucket(uint64_t{1} << 20), 20);
  EXPECT_EQ(Log2Bucket(uint64_t{1} << 47), 47);
  // Sizes past the last bucket are clamped into it rather than indexing past it.
  EXPECT_EQ(Log2Bucket(uint64_t{1} << 50), kLog2BucketCount - 1);
  EXPECT_EQ(Log2Bucket(~uint64_t{0}), kLog2BucketCount - 1);
}

}  // namespace
}  // namespace artune::transport
