#include "stats.h"

#include <ctime>

#include "fabric/shm/shm_fabric.h"

namespace artune::transport {

void StatsRecorder::CountSlice(Protocol protocol, uint64_t bytes) {
  PerProtocol& counters = protocols_[static_cast<int>(protocol)];
  counters.slices.fetch_add(1, std::memory_order_relaxed);
  counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
  int bucket = Log2Bucket(bytes);
  if (bucket >= kLog2BucketCount) bucket = kLog2BucketCount - 1;
  counters.by_bucket[bucket].fetch_add(1, std::memory_order_relaxed);
}

Stats StatsRecorder::Snapshot() const {
  Stats stats;
  for (int p = 0; p < kProtocolCount; ++p) {
    stats.by_protocol[p].slices = protocols_[p].slices.load(std::memory_order_relaxed);
    stats.by_protocol[p].bytes = protocols_[p].bytes.load(std::memory_order_relaxed);
    for (int b = 0; b < kLog2BucketCount; ++b) {
      stats.by_protocol[p].slices_by_bucket[b] =
          protocols_[p].by_bucket[b].load(std::memory_order_relaxed);
    }
  }
  stats.calls_started = calls_started_.load(std::memory_order_relaxed);
  stats.calls_completed = calls_completed_.load(std::memory_order_relaxed);
  stats.calls_failed = calls_failed_.load(std::memory_order_relaxed);
  stats.connections_accepted = connections_accepted_.load(std::memory_order_relaxed);
  stats.connections_dropped = connections_dropped_.load(std::memory_order_relaxed);
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
