#include "artune/probes/profile.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <tuple>

namespace artune::probes {

SizeClass ClassifySize(uint64_t size) {
  if (size == 0) return SizeClass::kEmpty;
  if (size < kSmallLimit) return SizeClass::kSmall;
  if (size < kMediumLimit) return SizeClass::kMedium;
  return SizeClass::kLarge;
}

const char* PayloadSchemeName(PayloadScheme scheme) {
  switch (scheme) {
    case PayloadScheme::kNone:
      return "none";
    case PayloadScheme::kUniform:
      return "uniform";
    case PayloadScheme::kRandom:
      return "random";
    case PayloadScheme::kSkew:
      return "skew";
  }
  return "none";
}

PayloadScheme ClassifyScheme(uint64_t count, uint64_t min, uint64_t max, double mean,
                             double median) {
  if (count == 0) return PayloadScheme::kNone;
  // max <= 1.25 * min, in integers: 4 * max <= 5 * min.
  if (4 * static_cast<long double>(max) <= 5 * static_cast<long double>(min)) {
    return PayloadScheme::kUniform;
  }
  if (mean >= 2 * median) return PayloadScheme::kSkew;
  return PayloadScheme::kRandom;
}

uint64_t Log2Histogram::BucketOf(uint64_t size) { return size == 0 ? 0 : std::bit_floor(size); }

uint64_t Log2Histogram::Total() const {
  uint64_t total = 0;
  for (const auto& [bound, count] : buckets) total += count;
  return total;
}

void SizeClasses::Add(uint64_t size) {
  ClassCount* target = nullptr;
  switch (ClassifySize(size)) {
    case SizeClass::kEmpty:
      target = &empty;
      break;
    case SizeClass::kSmall:
      target = &small;
      break;
    case SizeClass::kMedium:
      target = &medium;
      break;
    case SizeClass::kLarge:
      target = &large;
      break;
  }
  ++target->count;
  target->bytes += size;
}

uint32_t CallConcurrency::BucketOf(uint32_t inflight) {
  return inflight <= kInflightExactUpTo ? inflight : std::bit_ceil(inflight);
}

uint32_t CallConcurrency::Percentile(const std::map<uint32_t, uint64_t>& counts, double q) {
  uint64_t total = 0;
  for (const auto& [value, count] : counts) total += count;
  if (total == 0) return 0;
  const auto rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (const auto& [value, count] : counts) {
    seen += count;
    if (seen >= rank) return value;
  }
  return counts.rbegin()->first;
}

CallConcurrency CallConcurrency::FromCounts(const std::map<uint32_t, uint64_t>& counts) {
  CallConcurrency c;
  for (const auto& [value, count] : counts) {
    c.samples += count;
    c.histogram[BucketOf(value)] += count;
  }
  if (c.samples == 0) return c;
  c.p50 = Percentile(counts, 0.5);
  c.p90 = Percentile(counts, 0.9);
  c.max = counts.rbegin()->first;
  return c;
}

namespace {

struct MethodAccumulator {
  MethodProfile profile;
  std::vector<uint64_t> samples;  // reservoir of sizes
  // Calls in flight at each call start, exactly: value -> call starts.
  std::map<uint32_t, uint64_t> inflight_counts;
  uint64_t rng_state = 0x9e3779b97f4a7c15ull;

  // xorshift64*: deterministic, so the same capture always gives the same profile.
  uint64_t NextRandom() {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
  }

  void AddSize(uint64_t size) {
    if (samples.size() < kSizeSamples) {
      samples.push_back(size);
    } else {
      const uint64_t slot = NextRandom() % profile.messages;  // messages already counted
      if (slot < kSizeSamples) samples[slot] = size;
    }
  }
};

double Median(std::vector<uint64_t> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(mid), values.end());
  const double upper = static_cast<double>(values[mid]);
  if (values.size() % 2 == 1) return upper;
  const double lower = static_cast<double>(
      *std::max_element(values.begin(), values.begin() + static_cast<long>(mid)));
  return (lower + upper) / 2;
}

}  // namespace

struct ProfileBuilder::State {
  std::map<std::pair<std::string, MessageDirection>, MethodAccumulator> methods;
  std::map<uint64_t, ConnectionProfile> connections;
  std::map<std::pair<FlowKey, bool>, IoFlowProfile> io_flows;
  std::optional<uint64_t> first_timestamp_ns;
  Log2Histogram unattributed_iovec_sizes;
  // Calls in flight per connection id, by stream id (an entry leaves when empty).
  std::map<uint64_t, std::set<uint32_t>> inflight_calls;
};

ProfileBuilder::ProfileBuilder() : state_(std::make_unique<State>()) {}
ProfileBuilder::~ProfileBuilder() = default;

void ProfileBuilder::AddMessage(const GrpcMessage& message) {
  CountConnectionMessage(message);
  auto& acc = state_->methods[{std::string(message.method), message.direction}];
  MethodProfile& p = acc.profile;
  if (p.messages == 0) {
    p.method = std::string(message.method);
    p.direction = message.direction;
    p.min_size = message.length;
    p.max_size = message.length;
  }
  ++p.messages;
  p.bytes += message.length;
  p.min_size = std::min<uint64_t>(p.min_size, message.length);
  p.max_size = std::max<uint64_t>(p.max_size, message.length);
  if (message.compressed) ++p.compressed_messages;
  p.message_sizes.Add(message.length);
  p.classes.Add(message.length);
  acc.AddSize(message.length);
  if (message.call_start) StartCall(acc.inflight_counts, message);

  if (!state_->first_timestamp_ns) state_->first_timestamp_ns = message.timestamp_ns;
  const uint64_t first = *state_->first_timestamp_ns;
  uint64_t second =
      message.timestamp_ns > first ? (message.timestamp_ns - first) / 1000000000ull : 0;
  second = std::min<uint64_t>(second, kMaxRateBuckets - 1);
  if (p.rates.empty() || p.rates.back().second != second) {
    if (!p.rates.empty() && p.rates.back().second > second) {
      // Out-of-order timestamps (interleaved flows): fold into the matching bucket.
      auto it = std::lower_bound(p.rates.begin(), p.rates.end(), second,
                                 [](const RateBucket& b, uint64_t s) { return b.second < s; });
      if (it == p.rates.end() || it->second != second) it = p.rates.insert(it, {second, 0, 0});
      ++it->messages;
      it->bytes += message.length;
      return AddTensor(p, message);
    }
    p.rates.push_back({second, 0, 0});
  }
  ++p.rates.back().messages;
  p.rates.back().bytes += message.length;
  AddTensor(p, message);
}

void ProfileBuilder::StartCall(std::map<uint32_t, uint64_t>& inflight_counts,
                               const GrpcMessage& message) {
  std::set<uint32_t>& calls = state_->inflight_calls[message.connection_id];
  calls.insert(message.stream_id);
  // A bound for calls whose end was lost: the oldest goes first.
  while (calls.size() > kMaxInflightCallsPerConnection) calls.erase(calls.begin());
  ++inflight_counts[static_cast<uint32_t>(calls.size())];
}

void ProfileBuilder::EndCall(uint64_t connection_id, uint32_t stream_id) {
  const auto it = state_->inflight_calls.find(connection_id);
  if (it == state_->inflight_calls.end()) return;
  it->second.erase(stream_id);
  if (it->second.empty()) state_->inflight_calls.erase(it);
}

void ProfileBuilder::AddTensor(MethodProfile& p, const GrpcMessage& message) {
  if (message.tensor == nullptr) return;
  const std::string kind = message.tensor->ToString();
  auto it = p.tensors.find(kind);
  if (it != p.tensors.end()) {
    ++it->second;
  } else if (p.tensors.size() < kMaxTensorKinds) {
    p.tensors.emplace(kind, 1);
  } else {
    ++p.tensors["other"];
  }
}

void ProfileBuilder::AddIoCall(const IoCallEvent& event) {
  const bool send = IsSendSyscall(event.syscall);
  IoFlowProfile& flow = state_->io_flows[{event.flow, send}];
  if (flow.calls == 0) {
    flow.flow = event.flow.ToString();
    flow.send = send;
  }
  ++flow.calls;
  if (event.result < 0) {
    ++flow.failed_calls;
  } else {
    flow.bytes += static_cast<uint64_t>(event.result);
  }
  for (uint32_t length : event.iovec_lengths) flow.iovec_sizes.Add(length);
  flow.iovecs_per_call.Add(event.iovec_lengths.size());
}

void ProfileBuilder::AddMethodIovec(std::string_view method, MessageDirection direction,
                                    uint64_t length) {
  auto& acc = state_->methods[{std::string(method), direction}];
  if (acc.profile.method.empty()) {
    acc.profile.method = std::string(method);
    acc.profile.direction = direction;
  }
  acc.profile.iovec_sizes.Add(length);
}

void ProfileBuilder::AddUnattributedIovec(uint64_t length) {
  state_->unattributed_iovec_sizes.Add(length);
}

void ProfileBuilder::SetConnection(const ConnectionProfile& connection) {
  ConnectionProfile& target = state_->connections[connection.id];
  // Message counts were accumulated by AddMessage; keep them.
  const ConnectionProfile counted = target;
  target = connection;
  target.request_messages = counted.request_messages;
  target.request_bytes = counted.request_bytes;
  target.response_messages = counted.response_messages;
  target.response_bytes = counted.response_bytes;
  target.request_sizes = counted.request_sizes;
  target.response_sizes = counted.response_sizes;
}

void ProfileBuilder::CountConnectionMessage(const GrpcMessage& message) {
  ConnectionProfile& c = state_->connections[message.connection_id];
  c.id = message.connection_id;
  if (message.direction == MessageDirection::kRequest) {
    ++c.request_messages;
    c.request_bytes += message.length;
    c.request_sizes.Add(message.length);
  } else {
    ++c.response_messages;
    c.response_bytes += message.length;
    c.response_sizes.Add(message.length);
  }
}

Profile ProfileBuilder::Build(std::string backend, double duration_s,
                              const DecodeErrorCounts& errors, uint64_t lost_events) const {
  Profile profile;
  profile.backend = std::move(backend);
  profile.duration_s = duration_s;
  profile.lost_events = lost_events;
  for (size_t i = 0; i < errors.counts.size(); ++i) {
    if (errors.counts[i] > 0) {
      profile.errors[DecodeErrorName(static_cast<DecodeError>(i))] = errors.counts[i];
    }
  }
  for (const auto& [key, acc] : state_->methods) {
    MethodProfile method = acc.profile;
    method.median_size = Median(acc.samples);
    const double mean = method.messages == 0 ? 0.0
                                             : static_cast<double>(method.bytes) /
                                                   static_cast<double>(method.messages);
    method.scheme =
        ClassifyScheme(method.messages, method.min_size, method.max_size, mean, method.median_size);
    method.inflight = CallConcurrency::FromCounts(acc.inflight_counts);
    profile.methods.push_back(std::move(method));
  }
  for (const auto& [id, connection] : state_->connections) {
    if (connection.joined_midway) ++profile.connections_joined_midway;
    profile.connections.push_back(connection);
  }
  for (const auto& [key, flow] : state_->io_flows) profile.io_flows.push_back(flow);
  profile.unattributed_iovec_sizes = state_->unattributed_iovec_sizes;
  return profile;
}

}  // namespace artune::probes
