// Lock-free counters behind Stats (transport.h), updated on the hot path.
#pragma once

#include <atomic>
#include <cstdint>

#include "artune/transport/protocol.h"
#include "artune/transport/transport.h"

namespace artune::transport {

class StatsRecorder {
 public:
  // One slice this endpoint sent or received with `protocol`.
  void CountSlice(Protocol protocol, uint64_t bytes);
  void CallStarted() { calls_started_.fetch_add(1, std::memory_order_relaxed); }
  void CallCompleted() { calls_completed_.fetch_add(1, std::memory_order_relaxed); }
  void CallFailed() { calls_failed_.fetch_add(1, std::memory_order_relaxed); }
  void ConnectionAccepted() { connections_accepted_.fetch_add(1, std::memory_order_relaxed); }
  void ConnectionDropped() { connections_dropped_.fetch_add(1, std::memory_order_relaxed); }

  Stats Snapshot() const;

 private:
  struct PerProtocol {
    std::atomic<uint64_t> slices{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> by_bucket[kLog2BucketCount] = {};
  };
  PerProtocol protocols_[kProtocolCount];
  std::atomic<uint64_t> calls_started_{0};
  std::atomic<uint64_t> calls_completed_{0};
  std::atomic<uint64_t> calls_failed_{0};
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<uint64_t> connections_dropped_{0};
};

}  // namespace artune::transport
