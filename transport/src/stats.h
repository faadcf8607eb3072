// Lock-free counters behind Stats (transport.h), updated on the hot path.
#pragma once

#include <atomic>
#include <cstdint>

#include "artune/transport/protocol.h"
#include "artune/transport/transport.h"

namespace artune::transport {

// Each thread counts into a shard of its own, and Snapshot adds the shards up.
// The first kShards - 1 threads of the process that count get one each and are
// its only writer, so a count is a plain load and store, not a locked
// read-modify-write; later threads share the last shard, with fetch_add. One set
// of counters shared by all threads, updated with locked adds, put CountSlice at
// 9.5% of the process's CPU samples in `bench --benchmark ps` (each locked add
// waits for the thread's earlier stores, the ring's shared lines among them, and
// the caller and the progress thread moved the counters' lines between cores;
// bench/side-by-side.md, 2026-11-27 13:05-14:01).
//
// Threading: every method from any thread; a Snapshot taken while counts go on
// sees each counter at some moment between its start and end.
class StatsRecorder {
 public:
  // One slice this endpoint sent or received with `protocol`.
  void CountSlice(Protocol protocol, uint64_t bytes);
  void CallStarted() { Add(&Shard::calls_started); }
  void CallCompleted() { Add(&Shard::calls_completed); }
  void CallFailed() { Add(&Shard::calls_failed); }
  void ConnectionAccepted() { Add(&Shard::connections_accepted); }
  void ConnectionDropped() { Add(&Shard::connections_dropped); }

  Stats Snapshot() const;

  static constexpr int kShards = 16;

 private:
  struct PerProtocol {
    std::atomic<uint64_t> bytes{0};
    // Slices by size; their sum is the protocol's slice count.
    std::atomic<uint64_t> by_bucket[kLog2BucketCount] = {};
  };
  struct alignas(64) Shard {
    PerProtocol protocols[kProtocolCount];
    std::atomic<uint64_t> calls_started{0};
    std::atomic<uint64_t> calls_completed{0};
    std::atomic<uint64_t> calls_failed{0};
    std::atomic<uint64_t> connections_accepted{0};
    std::atomic<uint64_t> connections_dropped{0};
  };

  // The calling thread's shard index: fixed for the thread's life and the same in
  // every recorder; below kShards - 1 no other thread has it.
  static unsigned ThisThreadShard();
  static void Bump(std::atomic<uint64_t>& counter, uint64_t by, unsigned shard) {
    if (shard == kShards - 1) {
      counter.fetch_add(by, std::memory_order_relaxed);
    } else {
      counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
    }
  }
  void Add(std::atomic<uint64_t> Shard::*counter) {
    const unsigned shard = ThisThreadShard();
    Bump(shards_[shard].*counter, 1, shard);
  }

  Shard shards_[kShards];
};

}  // namespace artune::transport
