// The transport view's model: the counters a running transport server reports
// through its control plane (GetStats), and rates between the last two samples.
// Pure data; the poller (transport_source.h) feeds it.
//
// Threading: thread-safe (one mutex); Snapshot() copies.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "artune/transport/protocol.h"
#include "artune/transport/transport.h"

namespace artune::dashboard {

// One GetStats answer: the transport's own counters (transport.h), as the control
// plane's codec reads them, not a copy of their fields.
using TransportSample = transport::Stats;
using ProtocolSample = transport::ProtocolStats;

struct ProtocolRates {
  double slices_per_s = 0;
  double bytes_per_s = 0;
};

struct TransportSnapshot {
  bool configured = false;  // a --server was given
  std::string address;
  uint64_t polls = 0;  // successful GetStats answers so far
  std::string error;   // of the last poll when it failed, else empty
  std::optional<TransportSample> latest;
  std::array<ProtocolRates, transport::kProtocolCount> rates{};  // zero until two samples
  double calls_per_s = 0;
};

class TransportModel {
 public:
  void Configure(std::string address);
  // A successful poll at `now`.
  void AddSample(const TransportSample& sample, std::chrono::steady_clock::time_point now);
  // A failed poll: shown until the next success.
  void SetError(std::string error);
  TransportSnapshot Snapshot() const;

 private:
  mutable std::mutex mutex_;
  TransportSnapshot snapshot_;
  std::optional<std::chrono::steady_clock::time_point> latest_time_;
};

}  // namespace artune::dashboard
