// The traffic view's model: what a live probe has seen so far, per gRPC method,
// with rates over a sliding window. No terminal, no threads of its own: the probe
// thread adds, the drawing thread takes snapshots.
//
// Time is passed in by the caller (a steady-clock reading) so the rates are exact
// in tests. Rates count whole seconds: RPC/s and bytes/s are the sums over the last
// `kRateWindowSeconds` complete seconds divided by that many seconds (fewer at the
// start, never less than one). An RPC is one request message.
//
// Iovec sizes are not attributable to a gRPC method (one sendmsg carries frames of
// several streams), so they are kept for all send calls together.
//
// Threading: every method is thread-safe (one mutex); Snapshot() copies.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "artune/probes/backend.h"
#include "artune/probes/event.h"
#include "artune/probes/http2_decoder.h"
#include "artune/probes/profile.h"

namespace artune::dashboard {

using SteadyTime = std::chrono::steady_clock::time_point;

inline constexpr int kRateWindowSeconds = 3;
// Sizes kept per method and direction to find the median (for the scheme).
inline constexpr size_t kSchemeSamples = 1024;

enum class SourceState : uint8_t {
  kNone,      // no probe configured
  kStarting,  // backend starting
  kRunning,
  kFinished,  // input ended (a file, or the --exec command exited)
  kFailed,    // start or run failed: see the message
};
const char* SourceStateName(SourceState state);

struct MethodTraffic {
  std::string method;
  uint64_t requests = 0;
  uint64_t responses = 0;
  uint64_t bytes = 0;  // payload bytes, both directions
  double rpcs_per_s = 0;
  double bytes_per_s = 0;
  probes::Log2Histogram message_sizes;  // both directions
  probes::SizeClasses classes;          // both directions
  // Scheme of the direction that carries more bytes (the tensors, for RecvTensor).
  probes::PayloadScheme scheme = probes::PayloadScheme::kNone;
};

struct TrafficSnapshot {
  SourceState state = SourceState::kNone;
  std::string source;   // "preload: python train.py", "pcap: lo port 50051"
  std::string message;  // the error when failed, the exit status when finished
  double elapsed_s = 0;
  std::vector<MethodTraffic> methods;  // most bytes first, then by name
  uint64_t messages = 0;
  uint64_t send_calls = 0;
  probes::Log2Histogram send_iovec_sizes;
  probes::BackendCounters counters;
  uint64_t decode_errors = 0;
};

class TrafficModel {
 public:
  void SetSource(std::string description);
  // The origin of elapsed time and of the rate seconds; when never called, the
  // first message starts the clock.
  void MarkStarted(SteadyTime now);
  void SetState(SourceState state, std::string message = "");
  void SetCounters(const probes::BackendCounters& counters, uint64_t decode_errors);

  void AddMessage(std::string_view method, probes::MessageDirection direction, uint64_t length,
                  SteadyTime now);
  void AddIoCall(const probes::IoCallEvent& event);

  TrafficSnapshot Snapshot(SteadyTime now) const;

 private:
  struct DirectionState {
    uint64_t count = 0;
    uint64_t bytes = 0;
    uint64_t min = 0;
    uint64_t max = 0;
    std::vector<uint64_t> recent;  // ring of up to kSchemeSamples sizes
    size_t next = 0;
    void Add(uint64_t size);
    probes::PayloadScheme Scheme() const;
  };
  struct SecondBucket {
    int64_t second = 0;
    uint64_t requests = 0;
    uint64_t bytes = 0;
  };
  struct MethodState {
    DirectionState request, response;
    probes::Log2Histogram message_sizes;
    probes::SizeClasses classes;
    std::vector<SecondBucket> seconds;  // the last kRateWindowSeconds + 1 seconds
  };
  int64_t SecondOf(SteadyTime now) const;

  mutable std::mutex mutex_;
  bool started_ = false;
  SteadyTime start_{};
  SourceState state_ = SourceState::kNone;
  std::string source_;
  std::string message_;
  std::map<std::string, MethodState, std::less<>> methods_;
  uint64_t messages_ = 0;
  uint64_t send_calls_ = 0;
  probes::Log2Histogram send_iovec_sizes_;
  probes::BackendCounters counters_;
  uint64_t decode_errors_ = 0;
};

}  // namespace artune::dashboard
