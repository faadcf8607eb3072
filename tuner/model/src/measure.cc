#include "artune/model/measure.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include <sched.h>
#include <unistd.h>

#include "artune/model/curve_sampling.h"
#include "artune/transport/devices.h"
#include "artune/transport/knobs.h"
#include "artune/transport/transport.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/checksum.h"
#include "artune/tuner/payload.h"

namespace artune::model {
namespace {

using Clock = std::chrono::steady_clock;
using transport::PollingMode;
using transport::Protocol;

constexpr uint64_t kMaxSliceBytes = 10ull << 20;  // GeneratePayloadFromSizes' limit
constexpr uint64_t kEagerTop = 1ull << 20;        // eager_threshold's and coalesce_limit's top
constexpr uint64_t kReadChunk = 64ull << 20;      // chunk_size's top: one read of any slice
// The size step between the calls of several slices a rendezvous group measures.
constexpr uint64_t kSeveralSlicesStep = 4;
// The rendezvous groups' eager_threshold: every measured slice (min_size and up) is
// read, while the 16 B ack reply stays eager, as it is under every real config (a
// threshold of 0 would add a rendezvous of the reply to every call).
constexpr uint64_t kReplyEagerThreshold = tuner::kAckBytes;

// One config of the transport under which a protocol is measured at several sizes:
// first..last, on the coarse ladder and where the curve bends (curve_sampling.h).
struct Group {
  ModelPoint key;  // protocol, polling, chunk_size, pipeline_depth
  uint64_t first = 0, last = 0;
  transport::Config config;
};

// The depths worth measuring for `chunk`: a depth at or past the chunks of the
// largest slice reads them all at once, as any deeper one would (the model's lookup
// takes the deepest measured depth for those).
std::vector<uint32_t> DepthsFor(const MeasureOptions& options, uint64_t chunk) {
  std::vector<uint32_t> depths = options.pipeline_depths;
  std::sort(depths.begin(), depths.end());
  const uint64_t chunks = (options.max_size + chunk - 1) / chunk;
  std::vector<uint32_t> kept;
  for (uint32_t depth : depths) {
    kept.push_back(depth);
    if (depth >= chunks) break;
  }
  return kept;
}

std::vector<Group> PlanGroups(const MeasureOptions& options) {
  std::vector<Group> groups;
  for (PollingMode polling : options.pollings) {
    transport::Config base = options.base;
    base.polling = polling;
    auto add = [&](Protocol protocol, uint64_t chunk, uint32_t depth, uint64_t first, uint64_t last,
                   transport::Config config) {
      if (first > last) return;
      Group group;
      group.key.protocol = protocol;
      group.key.polling = polling;
      group.key.chunk_size = chunk;
      group.key.pipeline_depth = depth;
      group.first = first;
      group.last = last;
      group.config = config;
      groups.push_back(std::move(group));
    };
    const uint64_t eager_last = std::min(kEagerTop, options.max_size);
    transport::Config eager = base;
    eager.eager_threshold = kEagerTop;
    eager.coalesce_limit = 0;
    add(Protocol::kEager, 0, 0, options.min_size, eager_last, eager);
    transport::Config coalesced = eager;
    coalesced.coalesce_limit = kEagerTop;
    add(Protocol::kCoalescedEager, 0, 0, options.min_size * kCoalescedSlices, eager_last,
        coalesced);
    transport::Config read = base;
    read.eager_threshold = kReplyEagerThreshold;
    read.chunk_size = kReadChunk;
    add(Protocol::kRendezvousRead, 0, 0, options.min_size, options.max_size, read);
    for (uint64_t chunk : options.chunk_sizes) {
      for (uint32_t depth : DepthsFor(options, chunk)) {
        transport::Config chunked = base;
        chunked.eager_threshold = kReplyEagerThreshold;
        chunked.chunk_size = chunk;
        chunked.pipeline_depth = depth;
        add(Protocol::kChunkedRendezvous, chunk, depth, 2 * chunk, options.max_size, chunked);
      }
    }
  }
  return groups;
}

// The slices of one call of `protocol` carrying `units` units of `size` bytes.
std::vector<uint64_t> SlicesOf(Protocol protocol, uint64_t size, uint32_t units) {
  if (protocol != Protocol::kCoalescedEager) return std::vector<uint64_t>(units, size);
  return std::vector<uint64_t>(kCoalescedSlices, size / kCoalescedSlices);
}

bool IsRendezvous(Protocol protocol) {
  return protocol == Protocol::kRendezvousRead || protocol == Protocol::kChunkedRendezvous;
}

}  // namespace

std::vector<std::pair<uint64_t, uint32_t>> SeveralSlicePoints(Protocol protocol, uint64_t first,
                                                              uint64_t last,
                                                              const MeasureOptions& options) {
  std::vector<std::pair<uint64_t, uint32_t>> planned;
  if (!IsRendezvous(protocol) || first == 0 || first > last) return planned;
  // A finer ladder than the single-slice curves' (x4, not coarse_factor): the
  // factor is a ratio of two interpolations, and where it grows fast with the
  // slice (past 256KiB on tcp) a x16 gap left the read's factor at 1MiB the
  // 256KiB one while a chunked group, whose ladder starts at 1MiB, had its own.
  std::vector<uint64_t> ladder;
  for (uint64_t size = first; size < last; size *= kSeveralSlicesStep) ladder.push_back(size);
  ladder.push_back(last);
  for (uint32_t slices : options.slice_counts) {
    uint64_t largest = 0;
    for (uint64_t size : ladder) {
      if (size * slices > options.max_call_bytes) continue;
      planned.emplace_back(size, slices);
      largest = size;
    }
    // The largest slice a call of this many can carry: on loopback tcp the factor
    // grows with the slice (8 reads of 256KiB cost their sum, 6 of 1MiB 2-3x it),
    // and past the last measured size it is held.
    const uint64_t at_cap = std::min(last, options.max_call_bytes / slices);
    if (at_cap > largest && at_cap >= first) planned.emplace_back(at_cap, slices);
  }
  return planned;
}

std::vector<std::pair<uint64_t, uint32_t>> SeveralSliceAnchors(Protocol protocol, uint64_t first,
                                                               uint64_t last,
                                                               const MeasureOptions& options) {
  const std::vector<std::pair<uint64_t, uint32_t>> planned =
      SeveralSlicePoints(protocol, first, last, options);
  std::map<uint32_t, uint64_t> largest;  // by slices per call
  for (const auto& [size, slices] : planned) largest[slices] = std::max(largest[slices], size);
  const int coarse_step = std::countr_zero(options.coarse_factor);
  std::vector<std::pair<uint64_t, uint32_t>> anchors;
  for (const auto& [size, slices] : planned) {
    const uint64_t ratio = size % first == 0 ? size / first : 0;
    const bool on_coarse_ladder =
        std::has_single_bit(ratio) && std::countr_zero(ratio) % coarse_step == 0;
    if (on_coarse_ladder || size == largest[slices]) anchors.emplace_back(size, slices);
  }
  return anchors;
}

namespace {

// Seconds per call of up to `calls` calls kept `inflight` deep (see kSampleSeconds).
Result<double> TimeCalls(tuner::BenchChannel& channel, const tuner::PreparedPayload& prepared,
                         uint32_t calls, uint32_t inflight) {
  std::mutex mutex;
  std::condition_variable changed;
  uint32_t in_flight = 0;
  Status first_error;
  const auto start = Clock::now();
  uint32_t issued = 0;
  for (; issued < calls; ++issued) {
    // Past kSampleSeconds, once the window has been filled, no further call: a
    // starved protocol is timed on what it managed.
    if (issued >= inflight &&
        std::chrono::duration<double>(Clock::now() - start).count() >= kSampleSeconds) {
      break;
    }
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return in_flight < inflight; });
    if (!first_error.ok()) break;
    ++in_flight;
    lock.unlock();
    channel.CallAsync(tuner::BenchMethod::kAck, prepared, [&](Status status) {
      std::lock_guard guard(mutex);
      if (!status.ok() && first_error.ok()) first_error = status;
      --in_flight;
      changed.notify_all();
    });
  }
  std::unique_lock lock(mutex);
  changed.wait(lock, [&] { return in_flight == 0; });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ARTUNE_RETURN_IF_ERROR(first_error);
  return seconds / issued;
}

// Payloads prepared on the channel once, by slice layout, for the whole run.
class PayloadCache {
 public:
  PayloadCache(tuner::BenchChannel& channel, uint64_t seed) : channel_(channel), seed_(seed) {}
  Result<const tuner::PreparedPayload*> Get(Protocol protocol, uint64_t size, uint32_t units) {
    const std::vector<uint64_t> slices = SlicesOf(protocol, size, units);
    auto found = prepared_.find(slices);
    if (found != prepared_.end()) return found->second.get();
    ARTUNE_ASSIGN_OR_RETURN(tuner::Payload payload,
                            tuner::GeneratePayloadFromSizes(slices, seed_ + prepared_.size()));
    payloads_.push_back(std::make_unique<tuner::Payload>(std::move(payload)));
    ARTUNE_ASSIGN_OR_RETURN(auto prepared, channel_.Prepare(*payloads_.back()));
    return (prepared_[slices] = std::move(prepared)).get();
  }

 private:
  tuner::BenchChannel& channel_;
  uint64_t seed_;
  std::vector<std::unique_ptr<tuner::Payload>> payloads_;  // outlive their prepared copies
  std::map<std::vector<uint64_t>, std::unique_ptr<tuner::PreparedPayload>> prepared_;
};

struct Connection {
  std::unique_ptr<tuner::BenchTransport> bench;
  std::vector<std::unique_ptr<tuner::BenchServer>> servers;  // empty with a peer
  std::unique_ptr<tuner::BenchChannel> channel;
};

Result<Connection> Connect(const MeasureOptions& options) {
  Connection connection;
  connection.bench = tuner::MakeArtuneBenchTransport(options.base);
  std::string address;
  if (options.peer.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(const std::string host, transport::LocalListenHost(options.base));
    ARTUNE_ASSIGN_OR_RETURN(connection.servers,
                            tuner::StartLoopbackServers(*connection.bench, 1, host));
    address = connection.servers.front()->address();
  } else {
    ARTUNE_ASSIGN_OR_RETURN(address, tuner::ServerAddressFor("artune", options.peer, 0));
  }
  ARTUNE_ASSIGN_OR_RETURN(connection.channel, connection.bench->Connect(address));
  return connection;
}

// The figures of every point, one per round: by group index, then size, then
// inflight, then slices per call.
using Figures =
    std::map<std::tuple<size_t, uint64_t, uint32_t, uint32_t>, std::vector<StableFigure>>;

// " x4" (calls in flight) and ", 8 slices per call" past one: a point's label
// after its group's and size.
std::string PointSuffix(uint32_t inflight, uint32_t slices) {
  return " x" + std::to_string(inflight) +
         (slices > 1 ? ", " + std::to_string(slices) + " slices per call" : "");
}

// One group's round. The first round picks the sizes (coarse ladder, refined where
// the curve bends while `may_refine` allows) and, for a rendezvous group, adds the
// calls of several slices (SeveralSlicePoints, at the first inflight count; past
// the anchors only while `may_refine` allows); later rounds measure the same
// points, shuffled. Every size: one warm-up call, then
// samples until stable, or a single sample once `may_refine` says the round is
// behind its schedule.
Status MeasureGroup(const Group& group, const MeasureOptions& options, Connection& connection,
                    PayloadCache& payloads, std::mt19937_64& random, size_t index,
                    const RefineFn& may_refine, Figures& figures) {
  Status reconfigured = connection.channel->Reconfigure(group.config);
  if (!reconfigured.ok()) return reconfigured.WithContext("cannot force " + GroupLabel(group.key));
  auto measure = [&](uint64_t size, uint32_t slices,
                     const std::vector<uint32_t>& inflights) -> Result<std::vector<double>> {
    ARTUNE_ASSIGN_OR_RETURN(const tuner::PreparedPayload* prepared,
                            payloads.Get(group.key.protocol, size, slices));
    Status warm = connection.channel->Call(tuner::BenchMethod::kAck, *prepared);
    if (!warm.ok()) {
      return warm.WithContext(GroupLabel(group.key) + ", " + transport::FormatBytes(size) +
                              PointSuffix(1, slices));
    }
    std::vector<double> values;
    for (uint32_t inflight : inflights) {
      // Behind schedule (refining no longer allowed), one sample per point: the
      // coarse curves must still fit the budget on a starved host.
      StableOptions stability = options.stability;
      if (!may_refine()) stability.agreeing = 1;
      auto figure = SampleUntilStable(stability, [&] {
        return TimeCalls(*connection.channel, *prepared, CallsFor(size * slices, inflight),
                         inflight);
      });
      if (!figure.ok()) {
        return figure.status().WithContext(GroupLabel(group.key) + ", " +
                                           transport::FormatBytes(size) +
                                           PointSuffix(inflight, slices));
      }
      figures[{index, size, inflight, slices}].push_back(*figure);
      values.push_back(figure->value);
    }
    return values;
  };
  std::vector<uint64_t> sizes;
  std::vector<std::pair<uint64_t, uint32_t>> several;  // (size, slices) past one slice
  std::vector<std::pair<uint64_t, uint32_t>> anchors;  // of `several`; first round only
  for (const auto& [key, measured] : figures) {
    const auto& [group_index, size, inflight, slices] = key;
    if (group_index != index || inflight != options.inflights.front()) continue;
    if (slices == 1) {
      sizes.push_back(size);
    } else {
      several.emplace_back(size, slices);
    }
  }
  if (sizes.empty()) {
    LadderOptions ladder;
    ladder.first = group.first;
    ladder.last = group.last;
    ladder.coarse_factor = options.coarse_factor;
    ladder.tolerance = options.refine_tolerance;
    auto measure_size = [&](uint64_t size) { return measure(size, 1, options.inflights); };
    ARTUNE_RETURN_IF_ERROR(SampleCurve(ladder, measure_size, may_refine).status());
    several = SeveralSlicePoints(group.key.protocol, group.first, group.last, options);
    anchors = SeveralSliceAnchors(group.key.protocol, group.first, group.last, options);
  } else {
    std::shuffle(sizes.begin(), sizes.end(), random);
    for (uint64_t size : sizes)
      ARTUNE_RETURN_IF_ERROR(measure(size, 1, options.inflights).status());
  }
  std::shuffle(several.begin(), several.end(), random);
  // The first round measures the anchors whatever the schedule, then the x4 steps
  // between them while the round keeps to it; later rounds, what the first measured.
  auto is_anchor = [&](const std::pair<uint64_t, uint32_t>& point) {
    return std::find(anchors.begin(), anchors.end(), point) != anchors.end();
  };
  std::stable_partition(several.begin(), several.end(), is_anchor);
  for (const auto& point : several) {
    if (!anchors.empty() && !is_anchor(point) && !may_refine()) break;
    ARTUNE_RETURN_IF_ERROR(
        measure(point.first, point.second, {options.inflights.front()}).status());
  }
  return Status::Ok();
}

// A point from its rounds' figures: one round's figure as it is; several: the
// median of their values, low and high over every sample, the samples counted.
ModelPoint PointOf(ModelPoint point, const std::vector<StableFigure>& rounds) {
  std::vector<double> values;
  point.low_s = rounds.front().low;
  point.high_s = rounds.front().high;
  point.rounds = 0;
  for (const StableFigure& figure : rounds) {
    values.push_back(figure.value);
    point.low_s = std::min(point.low_s, figure.low);
    point.high_s = std::max(point.high_s, figure.high);
    point.rounds += figure.samples;
  }
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  point.median_s = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return point;
}

void Summarise(const std::vector<Group>& groups, const Figures& figures, MeasureReport& report) {
  std::vector<double> spreads;
  for (const auto& [key, rounds] : figures) {
    const auto& [index, size, inflight, slices] = key;
    ModelPoint point = groups[index].key;
    point.size = size;
    point.inflight = inflight;
    point.slices = slices;
    point = PointOf(point, rounds);
    spreads.push_back(point.Spread());
    if (point.Spread() > report.worst_spread) {
      report.worst_spread = point.Spread();
      report.worst_point =
          GroupLabel(point) + ", " + transport::FormatBytes(size) + PointSuffix(inflight, slices);
    }
    for (const StableFigure& figure : rounds) report.unstable_points += figure.stable ? 0 : 1;
    report.model.points.push_back(point);
  }
  if (!spreads.empty()) {
    std::nth_element(spreads.begin(), spreads.begin() + spreads.size() / 2, spreads.end());
    report.median_spread = spreads[spreads.size() / 2];
  }
}

}  // namespace

std::string BusyPollingSkipReason(const MeasureOptions& options) {
  const auto& pollings = options.pollings;
  if (std::find(pollings.begin(), pollings.end(), PollingMode::kBusy) == pollings.end() ||
      pollings.size() == 1) {
    return "";
  }
  uint32_t cores = options.usable_cores;
  if (cores == 0) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return "";
    cores = static_cast<uint32_t>(CPU_COUNT(&allowed));
  }
  const uint32_t spinning = options.peer.empty() ? 2 : 1;
  if (cores > spinning) return "";
  return "busy polling not measured: " + std::to_string(cores) + " usable cores for " +
         std::to_string(spinning) + " spinning progress thread" + (spinning > 1 ? "s" : "") +
         (options.peer.empty() ? " (loopback: both sides in this process)" : "") +
         " and the caller; each call would wait for a scheduler slice";
}

Status ValidateMeasureOptions(const MeasureOptions& options) {
  if (options.pollings.empty()) return Status::InvalidArgument("no polling mode to measure");
  if (options.inflights.empty() ||
      std::count(options.inflights.begin(), options.inflights.end(), 0u) > 0) {
    return Status::InvalidArgument("inflights must list at least one count, each at least 1");
  }
  if (options.min_rounds == 0 || options.min_rounds > options.rounds) {
    return Status::InvalidArgument("min_rounds must be 1..rounds (" +
                                   std::to_string(options.rounds) + ")");
  }
  if (options.min_size <= kReplyEagerThreshold || options.max_size > kMaxSliceBytes ||
      options.min_size > options.max_size) {
    return Status::InvalidArgument("slice sizes must lie in " +
                                   std::to_string(kReplyEagerThreshold + 1) +
                                   "B..10MiB (above the ack reply) with min_size <= max_size");
  }
  for (uint64_t chunk : options.chunk_sizes) {
    if (chunk < 4096 || chunk > kReadChunk) {
      return Status::InvalidArgument("chunk size " + transport::FormatBytes(chunk) +
                                     " is outside chunk_size's 4KiB..64MiB");
    }
  }
  for (uint32_t depth : options.pipeline_depths) {
    if (depth == 0 || depth > 64) {
      return Status::InvalidArgument("pipeline depth " + std::to_string(depth) +
                                     " is outside pipeline_depth's 1..64");
    }
  }
  for (uint32_t slices : options.slice_counts) {
    if (slices < 2 || slices > 64) {
      return Status::InvalidArgument("slice count " + std::to_string(slices) +
                                     " is outside 2..64 (one slice per call is always measured)");
    }
  }
  if (!(options.budget_s > 0)) return Status::InvalidArgument("budget_s must be positive");
  if (options.coarse_factor < 4 || (options.coarse_factor & (options.coarse_factor - 1)) != 0) {
    return Status::InvalidArgument("coarse_factor must be a power of two, at least 4");
  }
  ARTUNE_RETURN_IF_ERROR(ValidateStableOptions(options.stability));
  return Status::Ok();
}

uint32_t CallsFor(uint64_t size, uint32_t inflight) {
  constexpr uint64_t kBytesPerSample = 256ull << 10;
  const uint64_t by_bytes =
      std::clamp<uint64_t>(kBytesPerSample / std::max<uint64_t>(size, 1), 1, 16);
  return static_cast<uint32_t>(std::max<uint64_t>(by_bytes, inflight));
}

std::string GroupLabel(const ModelPoint& point) {
  std::string label(transport::ProtocolName(point.protocol));
  if (point.protocol == Protocol::kChunkedRendezvous) {
    label += " " + transport::FormatBytes(point.chunk_size) + " depth " +
             std::to_string(point.pipeline_depth);
  }
  return label + ", " + PollingName(point.polling);
}

Result<MeasureReport> MeasureLinkModel(const MeasureOptions& options,
                                       const MeasureProgressFn& progress) {
  ARTUNE_RETURN_IF_ERROR(ValidateMeasureOptions(options));
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  MeasureReport report;
  report.busy_polling_skipped = BusyPollingSkipReason(options);
  MeasureOptions planned_options = options;
  if (!report.busy_polling_skipped.empty())
    std::erase(planned_options.pollings, PollingMode::kBusy);
  ARTUNE_ASSIGN_OR_RETURN(Connection connection, Connect(options));
  const std::vector<Group> groups = PlanGroups(planned_options);
  PayloadCache payloads(*connection.channel, options.seed);
  std::mt19937_64 random(options.seed);
  Figures figures;
  uint32_t planned = options.rounds;
  for (uint32_t round = 1; round <= planned; ++round) {
    std::vector<size_t> order(groups.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), random);
    for (size_t done = 0; done < order.size(); ++done) {
      const Group& group = groups[order[done]];
      if (progress)
        progress({round, planned, done, groups.size(), GroupLabel(group.key), elapsed()});
      // Refining a curve only while the round keeps to the budget's share of the
      // groups done: past it, the coarse sizes stand and the model interpolates.
      const double share =
          options.budget_s * static_cast<double>(done + 1) / static_cast<double>(order.size());
      const RefineFn may_refine = [&] { return elapsed() < share; };
      ARTUNE_RETURN_IF_ERROR(MeasureGroup(group, options, connection, payloads, random, order[done],
                                          may_refine, figures));
    }
    report.rounds = round;
    // Another round only when the rounds so far say it ends within the budget.
    const double per_round = elapsed() / round;
    if (round >= options.min_rounds && elapsed() + per_round > options.budget_s) break;
  }
  connection.channel.reset();
  for (auto& server : connection.servers) server->Shutdown();
  report.duration_s = elapsed();
  report.model.fabric = connection.bench->fabric();
  report.model.peer = options.peer.empty() ? "loopback" : options.peer;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) report.model.host = host;
  Summarise(groups, figures, report);
  return report;
}

}  // namespace artune::model
