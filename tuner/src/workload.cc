#include "artune/tuner/workload.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <random>

#include "artune/probes/profile_output.h"

namespace artune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxMessageBytes = 10ull << 20;  // the payload's Large limit

struct MethodSource {
  std::string label;  // "method direction"
  uint64_t messages = 0;
  uint64_t min_size = 0, max_size = 0;
  std::vector<std::pair<uint64_t, uint64_t>> buckets;  // lower bound, count (count > 0)
  // The captured send iovecs at or above kDataIovecFloor (lower bound, count > 0),
  // their total count, and the count of those below it.
  std::vector<std::pair<uint64_t, uint64_t>> data_iovec_buckets;
  uint64_t data_iovecs = 0;
  uint64_t framing_iovecs = 0;
  // Message size bucket -> the data iovecs assigned to the messages of that bucket
  // (AssignIovecs); a bucket without an entry replays as one buffer per message.
  struct Pieces {
    std::vector<std::pair<uint64_t, uint64_t>> buckets;  // lower bound, count (count > 0)
    uint64_t total = 0;
  };
  std::map<uint64_t, Pieces> pieces_by_message_bucket;
};

void SplitIovecs(const probes::Log2Histogram& iovecs, MethodSource& source) {
  for (const auto& [lower, count] : iovecs.buckets) {
    if (count == 0) continue;
    if (lower >= kDataIovecFloor && lower <= kMaxMessageBytes) {
      source.data_iovec_buckets.emplace_back(lower, count);
      source.data_iovecs += count;
    } else if (lower < kDataIovecFloor) {
      source.framing_iovecs += count;
    }
    // Iovecs over the largest message the replay sends cannot be one of its
    // slices; a message is never larger, so they would only be cut down to it.
  }
}

// Bytes of a typical member of a log2 bucket: its middle, within [low, high].
uint64_t MiddleOf(uint64_t lower, uint64_t low, uint64_t high) {
  const uint64_t from = std::clamp<uint64_t>(lower, low, high);
  const uint64_t to = std::clamp<uint64_t>(lower == 0 ? 1 : lower * 2 - 1, from, high);
  return from + (to - from) / 2;
}

// Which captured data iovecs carried which messages (the rule in workload.h): the
// histograms are marginal, so the pairing is rebuilt by bytes, largest first. The
// messages of the largest size bucket take the largest iovecs that fit in their
// bucket until the iovecs' bytes cover the messages' bytes, then the next bucket
// takes from what is left, and so on (bytes estimated at bucket middles). A message
// that was sent as one iovec gets that iovec back; one cut into frame-sized pieces
// gets those pieces.
void AssignIovecs(MethodSource& source) {
  std::map<uint64_t, uint64_t, std::greater<>> left;  // iovec bucket -> unassigned count
  for (const auto& [lower, count] : source.data_iovec_buckets) left[lower] = count;
  for (auto bucket = source.buckets.rbegin(); bucket != source.buckets.rend(); ++bucket) {
    const auto [message_lower, message_count] = *bucket;
    uint64_t bytes_needed =
        message_count * MiddleOf(message_lower, source.min_size, source.max_size);
    MethodSource::Pieces pieces;
    for (auto it = left.lower_bound(message_lower); it != left.end() && bytes_needed > 0; ++it) {
      // No iovec of a message is larger than the method's largest message.
      const uint64_t piece_bytes =
          MiddleOf(it->first, it->first, std::max(it->first, source.max_size));
      const uint64_t take = std::min(it->second, (bytes_needed + piece_bytes - 1) / piece_bytes);
      if (take == 0) continue;
      pieces.buckets.emplace_back(it->first, take);
      pieces.total += take;
      it->second -= take;
      bytes_needed -= std::min(bytes_needed, take * piece_bytes);
    }
    if (pieces.total > 0) source.pieces_by_message_bucket[message_lower] = std::move(pieces);
  }
}

std::vector<MethodSource> SourcesOf(const probes::Profile& profile) {
  std::vector<MethodSource> sources;
  for (const probes::MethodProfile& method : profile.methods) {
    MethodSource source;
    source.label = method.method + " " + probes::MessageDirectionName(method.direction);
    source.min_size = std::max<uint64_t>(1, method.min_size);
    source.max_size = std::clamp<uint64_t>(method.max_size, source.min_size, kMaxMessageBytes);
    for (const auto& [lower, count] : method.message_sizes.buckets) {
      if (count > 0 && lower <= kMaxMessageBytes) source.buckets.emplace_back(lower, count);
    }
    for (const auto& [lower, count] : source.buckets) source.messages += count;
    SplitIovecs(method.iovec_sizes, source);
    AssignIovecs(source);
    if (source.messages > 0) sources.push_back(std::move(source));
  }
  return sources;
}

// Largest-remainder apportionment of `total` over weights.
std::vector<uint64_t> Apportion(const std::vector<uint64_t>& weights, uint64_t total) {
  uint64_t weight_sum = 0;
  for (uint64_t weight : weights) weight_sum += weight;
  std::vector<uint64_t> shares(weights.size(), 0);
  std::vector<std::pair<double, size_t>> remainders;
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double exact = static_cast<double>(total) * static_cast<double>(weights[i]) /
                         static_cast<double>(weight_sum);
    shares[i] = static_cast<uint64_t>(exact);
    given += shares[i];
    remainders.emplace_back(exact - static_cast<double>(shares[i]), i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < total && i < remainders.size(); ++i, ++given) {
    ++shares[remainders[i].second];
  }
  return shares;
}

struct DrawnSize {
  uint64_t bucket = 0;  // the message size bucket it was drawn from
  uint64_t size = 0;
};

// Lower bound of a bucket drawn by count from `buckets` (counts sum to `total`).
uint64_t DrawBucket(const std::vector<std::pair<uint64_t, uint64_t>>& buckets, uint64_t total,
                    std::mt19937_64& rng) {
  uint64_t pick = std::uniform_int_distribution<uint64_t>(0, total - 1)(rng);
  for (const auto& [lower, count] : buckets) {
    if (pick < count) return lower;
    pick -= count;
  }
  return buckets.back().first;
}

DrawnSize DrawSize(const MethodSource& source, std::mt19937_64& rng) {
  const uint64_t lower = DrawBucket(source.buckets, source.messages, rng);
  const uint64_t upper = lower == 0 ? 1 : lower * 2 - 1;
  const uint64_t low =
      std::clamp<uint64_t>(std::max<uint64_t>(lower, 1), source.min_size, source.max_size);
  const uint64_t high = std::clamp<uint64_t>(upper, low, source.max_size);
  return {lower, std::uniform_int_distribution<uint64_t>(low, high)(rng)};
}

// The slices of one message of `size` bytes (the rule in workload.h): drawn from
// the iovecs assigned to its size bucket, cut to what is left, a tail under the
// floor absorbed, a piece of the message's own bucket taking the rest, at most
// kMaxReplaySlices. One slice when the bucket has no iovecs assigned.
std::vector<uint64_t> SliceSizes(const MethodSource& source, const DrawnSize& message,
                                 std::mt19937_64& rng) {
  const auto found = source.pieces_by_message_bucket.find(message.bucket);
  if (found == source.pieces_by_message_bucket.end()) return {message.size};
  const MethodSource::Pieces& pieces = found->second;
  const uint64_t size = message.size;
  std::vector<uint64_t> slices;
  uint64_t left = size;
  while (left > 0) {
    if (slices.size() + 1 == kMaxReplaySlices) {
      slices.push_back(left);
      break;
    }
    const uint64_t lower = DrawBucket(pieces.buckets, pieces.total, rng);
    uint64_t slice =
        std::min(std::uniform_int_distribution<uint64_t>(lower, lower * 2 - 1)(rng), left);
    // A piece of the message's own size bucket: the message was one iovec.
    if (lower >= message.bucket || left - slice < kDataIovecFloor) slice = left;
    slices.push_back(slice);
    left -= slice;
  }
  return slices;
}

Result<Workload> BuildReplay(const std::vector<MethodSource>& sources, int64_t capture_id,
                             uint32_t message_count, uint64_t seed, bool iovec_layout) {
  std::vector<uint64_t> weights;
  for (const MethodSource& source : sources) weights.push_back(source.messages);
  const std::vector<uint64_t> shares = Apportion(weights, message_count);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<size_t, DrawnSize>> plan;  // source index, size
  for (size_t i = 0; i < sources.size(); ++i) {
    for (uint64_t n = 0; n < shares[i]; ++n) plan.emplace_back(i, DrawSize(sources[i], rng));
  }
  std::shuffle(plan.begin(), plan.end(), rng);
  Workload workload;
  workload.description = "capture:" + std::to_string(capture_id);
  for (const MethodSource& source : sources) {
    ReplayLayout& layout = workload.layout[source.label];
    layout.from_iovecs = iovec_layout && source.data_iovecs > 0;
    layout.data_iovecs = source.data_iovecs;
    layout.framing_iovecs = source.framing_iovecs;
  }
  // Its own stream: the sizes and order above do not depend on the layout.
  std::mt19937_64 layout_rng(seed ^ 0x9e3779b97f4a7c15ull);
  for (size_t i = 0; i < plan.size(); ++i) {
    const MethodSource& source = sources[plan[i].first];
    const uint64_t size = plan[i].second.size;
    ReplayLayout& layout = workload.layout[source.label];
    const std::vector<uint64_t> slices = layout.from_iovecs
                                             ? SliceSizes(source, plan[i].second, layout_rng)
                                             : std::vector<uint64_t>{size};
    ARTUNE_ASSIGN_OR_RETURN(Payload payload, GeneratePayloadFromSizes(slices, seed + i));
    workload.total_bytes += size;
    workload.mix[source.label] += 1;
    layout.messages += 1;
    layout.slices += slices.size();
    layout.max_slices = std::max<uint64_t>(layout.max_slices, slices.size());
    workload.messages.push_back(std::move(payload));
  }
  std::erase_if(workload.layout, [](const auto& entry) { return entry.second.messages == 0; });
  return workload;
}

std::string FormatMean(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

}  // namespace

std::vector<std::string> DescribeLayout(const Workload& workload) {
  std::vector<std::string> lines;
  for (const auto& [label, layout] : workload.layout) {
    std::string line = label + ": ";
    if (layout.from_iovecs) {
      line += FormatMean(layout.mean_slices()) + " slices/message (max " +
              std::to_string(layout.max_slices) + ") from " + std::to_string(layout.data_iovecs) +
              " captured data iovecs (" + std::to_string(layout.framing_iovecs) +
              " framing iovecs under " + std::to_string(kDataIovecFloor) + " B dropped)";
    } else if (layout.data_iovecs > 0) {
      line += "1 buffer/message (iovec layout off)";
    } else {
      line += "1 buffer/message (no data iovecs captured";
      if (layout.framing_iovecs > 0) {
        line += "; " + std::to_string(layout.framing_iovecs) + " framing iovecs under " +
                std::to_string(kDataIovecFloor) + " B";
      }
      line += ")";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

Result<Workload> SchemeWorkload(const PayloadSpec& spec) {
  ARTUNE_ASSIGN_OR_RETURN(Payload payload, GeneratePayload(spec));
  Workload workload;
  workload.description = "scheme:" + std::string(SchemeName(spec.scheme));
  workload.total_bytes = payload.total_bytes();
  workload.mix["scheme " + std::string(SchemeName(spec.scheme))] = 1;
  workload.messages.push_back(std::move(payload));
  return workload;
}

Result<Workload> CaptureWorkload(const probes::Profile& profile, int64_t capture_id,
                                 const ReplayOptions& options) {
  const std::vector<MethodSource> sources = SourcesOf(profile);
  if (sources.empty()) {
    return Status::InvalidArgument("capture " + std::to_string(capture_id) +
                                   " has no gRPC message with a size to replay: probe a process "
                                   "while it sends RPCs, or use --scheme");
  }
  if (options.messages == 0) {
    return Status::InvalidArgument("a replay needs at least one message (messages is 0)");
  }
  ARTUNE_ASSIGN_OR_RETURN(Workload workload, BuildReplay(sources, capture_id, options.messages,
                                                         options.seed, options.iovec_layout));
  if (workload.total_bytes > options.max_total_bytes && options.messages > 1) {
    // Shorter list, same mix: scale the count by the overshoot.
    const double scale =
        static_cast<double>(options.max_total_bytes) / static_cast<double>(workload.total_bytes);
    const uint32_t shorter =
        std::max<uint32_t>(static_cast<uint32_t>(static_cast<double>(options.messages) * scale), 1);
    ARTUNE_ASSIGN_OR_RETURN(
        workload, BuildReplay(sources, capture_id, shorter, options.seed, options.iovec_layout));
  }
  uint64_t most_samples = 0;
  for (const probes::MethodProfile& method : profile.methods) {
    if (method.inflight.samples > most_samples && method.inflight.p50 > 0) {
      most_samples = method.inflight.samples;
      workload.captured_inflight = method.inflight.p50;
      workload.captured_inflight_method = method.method;
    }
  }
  return workload;
}

Result<Workload> LoadCaptureWorkload(db::Store& store, int64_t capture_id,
                                     const ReplayOptions& options) {
  ARTUNE_ASSIGN_OR_RETURN(db::CaptureRecord capture, store.GetCapture(capture_id));
  Result<probes::Profile> profile = probes::ProfileFromJson(capture.profile_json);
  if (!profile.ok()) {
    return Status::Corruption("capture " + std::to_string(capture_id) +
                              " has a stored profile that does not parse (" +
                              profile.status().message() + "): probe again");
  }
  return CaptureWorkload(*profile, capture_id, options);
}

namespace {

// The passes of one replay over `channel`: each sends the workload's messages in
// order, one call at a time or with up to `inflight` in flight, and a measured pass
// counts what completed into the result.
class ReplayPasses {
 public:
  ReplayPasses(BenchChannel& channel, const Workload& workload, uint32_t inflight,
               std::vector<std::unique_ptr<PreparedPayload>> prepared, RunResult& result)
      : channel_(channel),
        workload_(workload),
        inflight_(inflight),
        prepared_(std::move(prepared)),
        result_(result) {}

  Status Run(bool measured) {
    return inflight_ == 1 ? RunInOrder(measured) : RunWindowed(measured);
  }
  const std::vector<double>& latencies() const { return latencies_; }

 private:
  static double MicrosSince(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  void Count(double micros, uint64_t bytes) {
    latencies_.push_back(micros);
    result_.bytes_delivered += bytes;
    ++result_.rpcs;
  }

  Status RunInOrder(bool measured) {
    for (size_t i = 0; i < prepared_.size(); ++i) {
      const auto start = Clock::now();
      Status status = channel_.Call(BenchMethod::kAck, *prepared_[i]);
      const double micros = MicrosSince(start);
      if (!status.ok()) return status;
      if (measured) Count(micros, workload_.messages[i].total_bytes());
    }
    return Status::Ok();
  }

  // Stops issuing at the first failed call, and returns once every call issued has
  // completed (the callbacks use this object).
  Status RunWindowed(bool measured) {
    for (size_t i = 0; i < prepared_.size(); ++i) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return in_flight_ < inflight_; });
      if (!first_error_.ok()) break;
      ++in_flight_;
      lock.unlock();
      const auto start = Clock::now();
      const uint64_t bytes = workload_.messages[i].total_bytes();
      channel_.CallAsync(BenchMethod::kAck, *prepared_[i],
                         [this, start, bytes, measured](Status status) {
                           const double micros = MicrosSince(start);
                           std::lock_guard done_lock(mutex_);
                           if (!status.ok() && first_error_.ok()) first_error_ = status;
                           if (status.ok() && measured) Count(micros, bytes);
                           --in_flight_;
                           changed_.notify_all();
                         });
    }
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return in_flight_ == 0; });
    return first_error_;
  }

  BenchChannel& channel_;
  const Workload& workload_;
  const uint32_t inflight_;
  const std::vector<std::unique_ptr<PreparedPayload>> prepared_;
  RunResult& result_;
  std::vector<double> latencies_;
  std::mutex mutex_;
  std::condition_variable changed_;
  uint32_t in_flight_ = 0;
  Status first_error_;
};

}  // namespace

Result<RunResult> RunReplay(BenchChannel& channel, const Workload& workload,
                            const ReplayRunOptions& options) {
  if (workload.messages.empty()) return Status::InvalidArgument("the workload has no messages");
  if (options.inflight == 0 || options.rounds == 0) {
    return Status::InvalidArgument("a replay needs inflight >= 1 and rounds >= 1");
  }
  std::vector<std::unique_ptr<PreparedPayload>> prepared;
  for (const Payload& payload : workload.messages) {
    ARTUNE_ASSIGN_OR_RETURN(auto ready, channel.Prepare(payload));
    prepared.push_back(std::move(ready));
  }
  RunResult result;
  result.validated = true;
  ReplayPasses passes(channel, workload, options.inflight, std::move(prepared), result);

  auto record_failure = [&](const Status& status) -> Result<RunResult> {
    if (status.code() == ErrorCode::kCorruption) {
      result.validated = false;
      result.validation_error = status.message();
      return result;
    }
    return status;
  };

  for (uint32_t round = 0; round < options.warmup_rounds; ++round) {
    Status status = passes.Run(false);
    if (!status.ok()) return record_failure(status);
  }
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  while (result.passes < kMaxReplayPasses &&
         (result.passes < options.rounds || elapsed() < options.min_duration_s)) {
    Status status = passes.Run(true);
    if (!status.ok()) return record_failure(status);
    ++result.passes;
  }
  result.duration_s = elapsed();
  result.payload_bytes = workload.total_bytes;
  result.latency_us = Summarize(passes.latencies());
  if (result.duration_s > 0) {
    result.bandwidth_mbps = static_cast<double>(result.bytes_delivered) / result.duration_s / 1e6;
    result.rpcs_per_s = static_cast<double>(result.rpcs) / result.duration_s;
  }
  return result;
}

}  // namespace artune::tuner
