// The transport's counters (stats.h): per-thread shards add up to exact totals,
// with more threads than shards and a snapshot taken while counts go on.
#include "stats.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace artune::transport {
namespace {

TEST(StatsRecorderTest, ShardsFromManyThreadsAddUpExactly) {
  StatsRecorder recorder;
  constexpr int kThreads = StatsRecorder::kShards + 5;  // the last shard shared, too
  constexpr int kRounds = 2000;
  std::atomic<bool> counting{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&recorder, t] {
      for (int i = 0; i < kRounds; ++i) {
        recorder.CountSlice(Protocol::kEager, 100);
        recorder.CountSlice(Protocol::kRendezvousRead, uint64_t{1} << (20 + t % 3));
        recorder.CallStarted();
        recorder.CallCompleted();
        if (i % 10 == 0) recorder.CallFailed();
      }
      recorder.ConnectionAccepted();
      recorder.ConnectionDropped();
    });
  }
  // Snapshots while the threads count: never more than the final totals.
  std::thread reader([&] {
    while (counting.load()) {
      const Stats partial = recorder.Snapshot();
      EXPECT_LE(partial.calls_started, uint64_t{kThreads} * kRounds);
      EXPECT_LE(partial.by_protocol[static_cast<int>(Protocol::kEager)].slices,
                uint64_t{kThreads} * kRounds);
    }
  });
  for (std::thread& thread : threads) thread.join();
  counting = false;
  reader.join();

  const Stats stats = recorder.Snapshot();
  const uint64_t calls = uint64_t{kThreads} * kRounds;
  EXPECT_EQ(stats.calls_started, calls);
  EXPECT_EQ(stats.calls_completed, calls);
  EXPECT_EQ(stats.calls_failed, uint64_t{kThreads} * (kRounds / 10));
  EXPECT_EQ(stats.connections_accepted, uint64_t{kThreads});
  EXPECT_EQ(stats.connections_dropped, uint64_t{kThreads});
  const ProtocolStats& eager = stats.by_protocol[static_cast<int>(Protocol::kEager)];
  EXPECT_EQ(eager.slices, calls);
  EXPECT_EQ(eager.bytes, calls * 100);
  EXPECT_EQ(eager.slices_by_bucket[Log2Bucket(100)], calls);
  const ProtocolStats& rendezvous = stats.by_protocol[static_cast<int>(Protocol::kRendezvousRead)];
  EXPECT_EQ(rendezvous.slices, calls);
  uint64_t by_bucket = 0;
  for (uint64_t count : rendezvous.slices_by_bucket) by_bucket += count;
  EXPECT_EQ(by_bucket, calls) << "the buckets add up to the slices";
  uint64_t bytes = 0;
  for (int t = 0; t < kThreads; ++t) bytes += uint64_t{kRounds} << (20 + t % 3);
  EXPECT_EQ(rendezvous.bytes, bytes);
}

}  // namespace
}  // namespace artune::transport
