#include "transport_model.h"

namespace artune::dashboard {
namespace {

// Counter difference per second; a counter that went down (the server restarted)
// gives no rate rather than a huge one.
double RatePerSecond(uint64_t before, uint64_t after, double seconds) {
  if (after < before || seconds <= 0) return 0;
  return static_cast<double>(after - before) / seconds;
}

}  // namespace

void TransportModel::Configure(std::string address) {
  std::lock_guard lock(mutex_);
  snapshot_.configured = true;
  snapshot_.address = std::move(address);
}

void TransportModel::AddSample(const TransportSample& sample,
                               std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (snapshot_.latest && latest_time_) {
    const double seconds = std::chrono::duration<double>(now - *latest_time_).count();
    const TransportSample& before = *snapshot_.latest;
    for (int p = 0; p < transport::kProtocolCount; ++p) {
      snapshot_.rates[p].slices_per_s =
          RatePerSecond(before.by_protocol[p].slices, sample.by_protocol[p].slices, seconds);
      snapshot_.rates[p].bytes_per_s =
          RatePerSecond(before.by_protocol[p].bytes, sample.by_protocol[p].bytes, seconds);
    }
    snapshot_.calls_per_s = RatePerSecond(before.calls_completed, sample.calls_completed, seconds);
  }
  snapshot_.latest = sample;
  latest_time_ = now;
  ++snapshot_.polls;
  snapshot_.error.clear();
}

void TransportModel::SetError(std::string error) {
  std::lock_guard lock(mutex_);
  snapshot_.error = std::move(error);
}

TransportSnapshot TransportModel::Snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

}  // namespace artune::dashboard
