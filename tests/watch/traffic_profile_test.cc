// The traffic profile `artune watch` reads from a server's counters: what they grew
// by, the drift between two mixes and the replay list built from one.
#include "artune/watch/traffic_profile.h"

#include <gtest/gtest.h>

#include <map>

namespace artune::watch {
namespace {

using transport::Protocol;

void Count(transport::Stats& stats, Protocol protocol, uint64_t size, uint64_t messages) {
  transport::ProtocolStats& counters = stats.by_protocol[static_cast<int>(protocol)];
  counters.slices += messages;
  counters.bytes += messages * size;
  counters.slices_by_bucket[transport::Log2Bucket(size)] += messages;
}

TrafficProfile ProfileOf(const std::map<uint64_t, uint64_t>& messages_by_size) {
  transport::Stats stats;
  for (const auto& [size, messages] : messages_by_size) {
    Count(stats, Protocol::kEager, size, messages);
  }
  return ProfileBetween(transport::Stats{}, stats);
}

TEST(TrafficProfile, TheWindowIsWhatEveryProtocolsCountersGrewBy) {
  transport::Stats before, after;
  Count(before, Protocol::kEager, 100, 40);
  after = before;
  Count(after, Protocol::kEager, 100, 10);
  Count(after, Protocol::kRendezvousRead, 1 << 20, 3);
  Count(after, Protocol::kChunkedRendezvous, 1 << 20, 2);
  const TrafficProfile window = ProfileBetween(before, after);
  EXPECT_EQ(window.total, 15u);
  EXPECT_EQ(window.messages[transport::Log2Bucket(100)], 10u);
  EXPECT_EQ(window.messages[20], 5u);
}

TEST(TrafficProfile, AServerThatRestartedCountsFromItsRestart) {
  transport::Stats before, after;
  Count(before, Protocol::kEager, 100, 500);
  Count(after, Protocol::kEager, 4096, 7);  // fewer than before: counters began again
  const TrafficProfile window = ProfileBetween(before, after);
  EXPECT_EQ(window.total, 7u);
  EXPECT_EQ(window.messages[12], 7u);
}

TEST(TrafficProfile, SumsTheReadingsOfEveryServer) {
  transport::Stats a, b;
  Count(a, Protocol::kEager, 100, 3);
  Count(b, Protocol::kEager, 100, 4);
  const transport::Stats readings[] = {a, b};
  EXPECT_EQ(ProfileBetween(transport::Stats{}, SumStats(readings)).total, 7u);
}

TEST(Drift, ZeroForTheSameMixWhateverTheCountsOneForDisjointMixes) {
  EXPECT_DOUBLE_EQ(Drift(ProfileOf({{100, 10}, {4096, 5}}), ProfileOf({{100, 200}, {4096, 100}})),
                   0.0);
  EXPECT_DOUBLE_EQ(Drift(ProfileOf({{100, 10}}), ProfileOf({{1 << 20, 10}})), 1.0);
  EXPECT_DOUBLE_EQ(Drift(ProfileOf({{100, 10}}), TrafficProfile{}), 0.0);
}

// A few large tensors weigh what they cost: a thousand small messages beside one
// 1 MiB tensor, against the same beside ten, is most of the bytes moved.
TEST(Drift, WeighsBucketsByTheirBytesNotTheirMessages) {
  const double drift =
      Drift(ProfileOf({{100, 1000}, {1 << 20, 1}}), ProfileOf({{100, 1000}, {1 << 20, 10}}));
  EXPECT_GT(drift, 0.05);
  EXPECT_LT(drift, 0.1);  // both are nearly all large-tensor bytes
  const double small_share_moved =
      Drift(ProfileOf({{100, 1000}, {200, 10}}), ProfileOf({{100, 10}, {200, 1000}}));
  EXPECT_GT(small_share_moved, 0.9);
}

TEST(WorkloadFromProfile, KeepsTheMixAtBucketMiddlesUnderTheByteCap) {
  const TrafficProfile profile = ProfileOf({{100, 300}, {20000, 100}});
  auto workload = WorkloadFromProfile(profile, 32, /*seed=*/1);
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  EXPECT_EQ(workload->messages.size(), 32u);
  EXPECT_EQ(workload->description, "traffic:400");
  std::map<uint64_t, int> sizes;
  for (const tuner::Payload& message : workload->messages) {
    ASSERT_EQ(message.buffer_count(), 1u);
    ++sizes[message.total_bytes()];
  }
  EXPECT_EQ(sizes[BucketMiddle(transport::Log2Bucket(100))], 24);
  EXPECT_EQ(sizes[BucketMiddle(transport::Log2Bucket(20000))], 8);

  auto capped = WorkloadFromProfile(ProfileOf({{8 << 20, 50}}), 32, 1, /*max_total_bytes=*/
                                    64ull << 20);
  ASSERT_TRUE(capped.ok());
  EXPECT_LE(capped->total_bytes, 64ull << 20);
  EXPECT_GE(capped->messages.size(), 1u);
}

TEST(WorkloadFromProfile, AnEmptyProfileSaysNothingWasCarried) {
  auto workload = WorkloadFromProfile(TrafficProfile{}, 32, 1);
  ASSERT_FALSE(workload.ok());
  EXPECT_EQ(workload.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(workload.status().message().find("no message"), std::string::npos);
}

}  // namespace
}  // namespace artune::watch
