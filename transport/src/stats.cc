#include "stats.h"

#include <algorithm>
#include <ctime>

#include "fabric/shm/shm_fabric.h"

namespace artune::transport {

unsigned StatsRecorder::ThisThreadShard() {
  // 64 bits: no count of threads a process makes brings it back to 0.
  static std::atomic<uint64_t> threads_counting{0};
  thread_local const auto shard = static_cast<unsigned>(
      std::min<uint64_t>(threads_counting.fetch_add(1, std::memory_order_relaxed), kShards - 1));
  return shard;
}

void StatsRecorder::CountSlice(Protocol protocol, uint64_t bytes) {
  const unsigned shard = ThisThreadShard();
  PerProtocol& counters = shards_[shard].protocols[static_cast<int>(protocol)];
  Bump(counters.bytes, bytes, shard);
  int bucket = Log2Bucket(bytes);
  if (bucket >= kLog2BucketCount) bucket = kLog2BucketCount - 1;
  Bump(counters.by_bucket[bucket], 1, shard);
}

Stats StatsRecorder::Snapshot() const {
  Stats stats;
  for (const Shard& shard : shards_) {
    for (int p = 0; p < kProtocolCount; ++p) {
      const PerProtocol& counters = shard.protocols[p];
      stats.by_protocol[p].bytes += counters.bytes.load(std::memory_order_relaxed);
      for (int b = 0; b < kLog2BucketCount; ++b) {
        const uint64_t slices = counters.by_bucket[b].load(std::memory_order_relaxed);
        stats.by_protocol[p].slices_by_bucket[b] += slices;
        stats.by_protocol[p].slices += slices;
      }
    }
    stats.calls_started += shard.calls_started.load(std::memory_order_relaxed);
    stats.calls_completed += shard.calls_completed.load(std::memory_order_relaxed);
    stats.calls_failed += shard.calls_failed.load(std::memory_order_relaxed);
    stats.connections_accepted += shard.connections_accepted.load(std::memory_order_relaxed);
    stats.connections_dropped += shard.connections_dropped.load(std::memory_order_relaxed);
  }
  const fabric::shm::ShmReadCounters& shm = fabric::shm::ReadCounters();
  stats.shm_reads_one_copy = shm.one_copy.load(std::memory_order_relaxed);
  stats.shm_reads_owner_copy = shm.owner_copy.load(std::memory_order_relaxed);
  stats.shm_one_copy_refused = shm.cma_refused.load(std::memory_order_relaxed);
  timespec cpu{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0) {
    stats.process_cpu_ns =
        static_cast<uint64_t>(cpu.tv_sec) * 1000000000ull + static_cast<uint64_t>(cpu.tv_nsec);
  }
  return stats;
}

}  // namespace artune::transport
