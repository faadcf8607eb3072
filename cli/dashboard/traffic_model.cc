#include "traffic_model.h"

#include <algorithm>

namespace artune::dashboard {

const char* SourceStateName(SourceState state) {
  switch (state) {
    case SourceState::kNone:
      return "none";
    case SourceState::kStarting:
      return "starting";
    case SourceState::kRunning:
      return "running";
    case SourceState::kFinished:
      return "finished";
    case SourceState::kFailed:
      return "failed";
  }
  return "?";
}

void TrafficModel::DirectionState::Add(uint64_t size) {
  min = count == 0 ? size : std::min(min, size);
  max = count == 0 ? size : std::max(max, size);
  ++count;
  bytes += size;
  if (recent.size() < kSchemeSamples) {
    recent.push_back(size);
  } else {
    recent[next] = size;
    next = (next + 1) % kSchemeSamples;
  }
}

probes::PayloadScheme TrafficModel::DirectionState::Scheme() const {
  if (count == 0) return probes::PayloadScheme::kNone;
  std::vector<uint64_t> sorted = recent;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 == 1 ? static_cast<double>(sorted[n / 2])
                                   : (static_cast<double>(sorted[n / 2 - 1]) + sorted[n / 2]) / 2;
  const double mean = static_cast<double>(bytes) / static_cast<double>(count);
  return probes::ClassifyScheme(count, min, max, mean, median);
}

void TrafficModel::SetSource(std::string description) {
  std::lock_guard lock(mutex_);
  source_ = std::move(description);
}

void TrafficModel::MarkStarted(SteadyTime now) {
  std::lock_guard lock(mutex_);
  started_ = true;
  start_ = now;
}

void TrafficModel::SetState(SourceState state, std::string message) {
  std::lock_guard lock(mutex_);
  state_ = state;
  message_ = std::move(message);
}

void TrafficModel::SetCounters(const probes::BackendCounters& counters, uint64_t decode_errors) {
  std::lock_guard lock(mutex_);
  counters_ = counters;
  decode_errors_ = decode_errors;
}

int64_t TrafficModel::SecondOf(SteadyTime now) const {
  return std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
}

void TrafficModel::AddMessage(std::string_view method, probes::MessageDirection direction,
                              uint64_t length, SteadyTime now) {
  std::lock_guard lock(mutex_);
  if (!started_) {
    started_ = true;
    start_ = now;
  }
  auto it = methods_.find(method);
  if (it == methods_.end()) it = methods_.emplace(std::string(method), MethodState{}).first;
  MethodState& state = it->second;
  const bool request = direction == probes::MessageDirection::kRequest;
  (request ? state.request : state.response).Add(length);
  state.message_sizes.Add(length);
  state.classes.Add(length);
  ++messages_;

  const int64_t second = SecondOf(now);
  if (state.seconds.empty() || state.seconds.back().second != second) {
    state.seconds.push_back({second, 0, 0});
    // Keep the window plus the current, partial second.
    const int64_t oldest_kept = second - kRateWindowSeconds;
    std::erase_if(state.seconds,
                  [oldest_kept](const SecondBucket& b) { return b.second < oldest_kept; });
  }
  if (request) ++state.seconds.back().requests;
  state.seconds.back().bytes += length;
}

void TrafficModel::AddIoCall(const probes::IoCallEvent& event) {
  if (!probes::IsSendSyscall(event.syscall) || event.result < 0) return;
  std::lock_guard lock(mutex_);
  ++send_calls_;
  for (uint32_t length : event.iovec_lengths) send_iovec_sizes_.Add(length);
}

TrafficSnapshot TrafficModel::Snapshot(SteadyTime now) const {
  std::lock_guard lock(mutex_);
  TrafficSnapshot snapshot;
  snapshot.state = state_;
  snapshot.source = source_;
  snapshot.message = message_;
  snapshot.messages = messages_;
  snapshot.send_calls = send_calls_;
  snapshot.send_iovec_sizes = send_iovec_sizes_;
  snapshot.counters = counters_;
  snapshot.decode_errors = decode_errors_;
  if (started_) snapshot.elapsed_s = std::chrono::duration<double>(now - start_).count();

  // Complete seconds in the window: [current - window, current).
  const int64_t current = started_ ? SecondOf(now) : 0;
  const int64_t window = std::clamp<int64_t>(current, 1, kRateWindowSeconds);
  for (const auto& [name, state] : methods_) {
    MethodTraffic method;
    method.method = name;
    method.requests = state.request.count;
    method.responses = state.response.count;
    method.bytes = state.request.bytes + state.response.bytes;
    method.message_sizes = state.message_sizes;
    method.classes = state.classes;
    method.scheme = state.response.bytes > state.request.bytes ? state.response.Scheme()
                                                               : state.request.Scheme();
    uint64_t requests = 0, bytes = 0;
    for (const SecondBucket& bucket : state.seconds) {
      if (bucket.second >= current - window && bucket.second < current) {
        requests += bucket.requests;
        bytes += bucket.bytes;
      }
    }
    method.rpcs_per_s = static_cast<double>(requests) / static_cast<double>(window);
    method.bytes_per_s = static_cast<double>(bytes) / static_cast<double>(window);
    snapshot.methods.push_back(std::move(method));
  }
  std::sort(snapshot.methods.begin(), snapshot.methods.end(),
            [](const MethodTraffic& a, const MethodTraffic& b) {
              if (a.bytes != b.bytes) return a.bytes > b.bytes;
              return a.method < b.method;
            });
  return snapshot;
}

}  // namespace artune::dashboard
