#include "artune/watch/traffic_profile.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "artune/model/predict.h"
#include "artune/tuner/payload.h"

namespace artune::watch {
namespace {

constexpr uint64_t kMaxMessageBytes = 10ull << 20;  // GeneratePayloadFromSizes' limit

uint64_t MessagesOf(const transport::Stats& stats, int bucket) {
  uint64_t sum = 0;
  for (const transport::ProtocolStats& protocol : stats.by_protocol) {
    sum += protocol.slices_by_bucket[bucket];
  }
  return sum;
}

uint64_t TotalMessages(const transport::Stats& stats) {
  uint64_t sum = 0;
  for (const transport::ProtocolStats& protocol : stats.by_protocol) sum += protocol.slices;
  return sum;
}

// Byte shares per bucket; all zero for an empty profile.
std::array<double, transport::kLog2BucketCount> ByteShares(const TrafficProfile& profile) {
  std::array<double, transport::kLog2BucketCount> shares{};
  double total = 0;
  for (int b = 0; b < transport::kLog2BucketCount; ++b) {
    shares[b] = static_cast<double>(profile.messages[b]) * static_cast<double>(BucketMiddle(b));
    total += shares[b];
  }
  if (total > 0) {
    for (double& share : shares) share /= total;
  }
  return shares;
}

// `count` split over `weights` in proportion, largest remainders first (ties to the
// lower bucket), so the split sums to `count` exactly.
std::vector<uint64_t> Apportion(const std::array<uint64_t, transport::kLog2BucketCount>& weights,
                                uint64_t total_weight, uint64_t count) {
  std::vector<uint64_t> shares(weights.size(), 0);
  std::vector<std::pair<double, size_t>> remainders;
  uint64_t given = 0;
  for (size_t b = 0; b < weights.size(); ++b) {
    if (weights[b] == 0) continue;
    const double exact = static_cast<double>(count) * static_cast<double>(weights[b]) /
                         static_cast<double>(total_weight);
    shares[b] = static_cast<uint64_t>(std::floor(exact));
    given += shares[b];
    remainders.emplace_back(exact - std::floor(exact), b);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < count && i < remainders.size(); ++i, ++given) {
    ++shares[remainders[i].second];
  }
  return shares;
}

}  // namespace

TrafficProfile& TrafficProfile::operator+=(const TrafficProfile& other) {
  for (size_t b = 0; b < messages.size(); ++b) messages[b] += other.messages[b];
  total += other.total;
  return *this;
}

transport::Stats SumStats(std::span<const transport::Stats> readings) {
  transport::Stats sum;
  for (const transport::Stats& reading : readings) {
    for (size_t p = 0; p < std::size(sum.by_protocol); ++p) {
      transport::ProtocolStats& into = sum.by_protocol[p];
      const transport::ProtocolStats& from = reading.by_protocol[p];
      into.slices += from.slices;
      into.bytes += from.bytes;
      for (int b = 0; b < transport::kLog2BucketCount; ++b) {
        into.slices_by_bucket[b] += from.slices_by_bucket[b];
      }
    }
    sum.calls_started += reading.calls_started;
    sum.calls_completed += reading.calls_completed;
    sum.calls_failed += reading.calls_failed;
  }
  return sum;
}

TrafficProfile ProfileBetween(const transport::Stats& before, const transport::Stats& after) {
  const bool restarted = TotalMessages(after) < TotalMessages(before);
  TrafficProfile profile;
  for (int b = 0; b < transport::kLog2BucketCount; ++b) {
    const uint64_t now = MessagesOf(after, b);
    const uint64_t then = restarted ? 0 : MessagesOf(before, b);
    profile.messages[b] = now > then ? now - then : 0;
    profile.total += profile.messages[b];
  }
  return profile;
}

uint64_t BucketMiddle(int bucket) {
  if (bucket <= 0) return 1;
  return (uint64_t{1} << bucket) + (uint64_t{1} << (bucket - 1));
}

double Drift(const TrafficProfile& a, const TrafficProfile& b) {
  if (a.total == 0 || b.total == 0) return 0;
  const auto shares_a = ByteShares(a);
  const auto shares_b = ByteShares(b);
  double distance = 0;
  for (size_t i = 0; i < shares_a.size(); ++i) distance += std::fabs(shares_a[i] - shares_b[i]);
  return std::clamp(distance / 2, 0.0, 1.0);
}

Result<tuner::Workload> WorkloadFromProfile(const TrafficProfile& profile, uint32_t messages,
                                            uint64_t seed, uint64_t max_total_bytes) {
  if (profile.total == 0) {
    return Status::InvalidArgument("the traffic profile is empty: no message was carried yet");
  }
  if (messages == 0) return Status::InvalidArgument("a replay list needs at least one message");
  std::vector<uint64_t> sizes;
  for (uint64_t count = messages; count >= 1; count = count * 3 / 4) {
    const std::vector<uint64_t> shares = Apportion(profile.messages, profile.total, count);
    sizes.clear();
    uint64_t total = 0;
    for (size_t b = 0; b < shares.size(); ++b) {
      const uint64_t size = std::min(BucketMiddle(static_cast<int>(b)), kMaxMessageBytes);
      for (uint64_t i = 0; i < shares[b]; ++i) sizes.push_back(size);
      total += shares[b] * size;
    }
    if (total <= max_total_bytes || count == 1) break;
  }
  std::mt19937_64 shuffle(seed);
  std::shuffle(sizes.begin(), sizes.end(), shuffle);
  tuner::Workload workload;
  workload.description = "traffic:" + std::to_string(profile.total);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t size[] = {sizes[i]};
    ARTUNE_ASSIGN_OR_RETURN(tuner::Payload payload,
                            tuner::GeneratePayloadFromSizes(size, seed + i));
    workload.total_bytes += payload.total_bytes();
    workload.messages.push_back(std::move(payload));
  }
  workload.mix["carried messages"] = workload.messages.size();
  return workload;
}

std::string ProfileJson(const TrafficProfile& profile) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (int b = 0; b < transport::kLog2BucketCount; ++b) {
    if (profile.messages[b] != 0) out[model::BucketLabel(b)] = profile.messages[b];
  }
  return out.dump();
}

}  // namespace artune::watch
