#include "artune/model/measure.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include <unistd.h>

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
// The rendezvous groups' eager_threshold: every measured slice (min_size and up) is
// read, while the 16 B ack reply stays eager, as it is under every real config (a
// threshold of 0 would add a rendezvous of the reply to every call).
constexpr uint64_t kReplyEagerThreshold = tuner::kAckBytes;

// One config of the transport under which a protocol is measured at several sizes.
struct Group {
  ModelPoint key;  // protocol, polling, chunk_size, pipeline_depth
  std::vector<uint64_t> sizes;
  transport::Config config;
};

std::vector<uint64_t> Ladder(uint64_t first, uint64_t last, uint64_t factor) {
  std::vector<uint64_t> sizes;
  for (uint64_t size = first; size <= last; size *= factor) sizes.push_back(size);
  if (!sizes.empty() && sizes.back() != last && last > first) sizes.push_back(last);
  return sizes;
}

std::vector<Group> PlanGroups(const MeasureOptions& options) {
  std::vector<Group> groups;
  for (PollingMode polling : options.pollings) {
    transport::Config base = options.base;
    base.polling = polling;
    auto add = [&](Protocol protocol, uint64_t chunk, uint32_t depth, std::vector<uint64_t> sizes,
                   transport::Config config) {
      if (sizes.empty()) return;
      Group group;
      group.key.protocol = protocol;
      group.key.polling = polling;
      group.key.chunk_size = chunk;
      group.key.pipeline_depth = depth;
      group.sizes = std::move(sizes);
      group.config = config;
      groups.push_back(std::move(group));
    };
    transport::Config eager = base;
    eager.eager_threshold = kEagerTop;
    eager.coalesce_limit = 0;
    add(Protocol::kEager, 0, 0, Ladder(options.min_size, std::min(kEagerTop, options.max_size), 4),
        eager);
    transport::Config coalesced = eager;
    coalesced.coalesce_limit = kEagerTop;
    add(Protocol::kCoalescedEager, 0, 0,
        Ladder(options.min_size * kCoalescedSlices, std::min(kEagerTop, options.max_size), 4),
        coalesced);
    transport::Config read = base;
    read.eager_threshold = kReplyEagerThreshold;
    read.chunk_size = kReadChunk;
    add(Protocol::kRendezvousRead, 0, 0, Ladder(options.min_size, options.max_size, 4), read);
    for (uint64_t chunk : options.chunk_sizes) {
      for (uint32_t depth : options.pipeline_depths) {
        transport::Config chunked = base;
        chunked.eager_threshold = kReplyEagerThreshold;
        chunked.chunk_size = chunk;
        chunked.pipeline_depth = depth;
        add(Protocol::kChunkedRendezvous, chunk, depth,
            2 * chunk <= options.max_size ? Ladder(2 * chunk, options.max_size, 4)
                                          : std::vector<uint64_t>{},
            chunked);
      }
    }
  }
  return groups;
}

// The slices of one call of `protocol` carrying `size` bytes.
std::vector<uint64_t> SlicesOf(Protocol protocol, uint64_t size) {
  if (protocol != Protocol::kCoalescedEager) return {size};
  return std::vector<uint64_t>(kCoalescedSlices, size / kCoalescedSlices);
}

// Seconds per call of `calls` calls kept `inflight` deep, after one warm-up call.
Result<double> TimeCalls(tuner::BenchChannel& channel, const tuner::PreparedPayload& prepared,
                         uint32_t calls, uint32_t inflight) {
  ARTUNE_RETURN_IF_ERROR(channel.Call(tuner::BenchMethod::kAck, prepared));
  std::mutex mutex;
  std::condition_variable changed;
  uint32_t in_flight = 0;
  Status first_error;
  const auto start = Clock::now();
  for (uint32_t i = 0; i < calls; ++i) {
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
  return seconds / calls;
}

// Payloads prepared on the channel once, by slice layout, for the whole run.
class PayloadCache {
 public:
  PayloadCache(tuner::BenchChannel& channel, uint64_t seed) : channel_(channel), seed_(seed) {}
  Result<const tuner::PreparedPayload*> Get(Protocol protocol, uint64_t size) {
    const std::vector<uint64_t> slices = SlicesOf(protocol, size);
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

// The samples of every point: by group index, then size, then inflight.
using Samples = std::map<std::tuple<size_t, uint64_t, uint32_t>, std::vector<double>>;

Status MeasureGroup(const Group& group, const MeasureOptions& options, Connection& connection,
                    PayloadCache& payloads, std::mt19937_64& random, size_t index,
                    Samples& samples) {
  Status reconfigured = connection.channel->Reconfigure(group.config);
  if (!reconfigured.ok()) return reconfigured.WithContext("cannot force " + GroupLabel(group.key));
  std::vector<uint64_t> sizes = group.sizes;
  std::shuffle(sizes.begin(), sizes.end(), random);
  for (uint64_t size : sizes) {
    ARTUNE_ASSIGN_OR_RETURN(const tuner::PreparedPayload* prepared,
                            payloads.Get(group.key.protocol, size));
    for (uint32_t inflight : options.inflights) {
      auto seconds = TimeCalls(*connection.channel, *prepared, CallsFor(size, inflight), inflight);
      if (!seconds.ok()) {
        return seconds.status().WithContext(GroupLabel(group.key) + ", " +
                                            transport::FormatBytes(size) + " x" +
                                            std::to_string(inflight));
      }
      samples[{index, size, inflight}].push_back(*seconds);
    }
  }
  return Status::Ok();
}

void Summarise(const std::vector<Group>& groups, const Samples& samples, MeasureReport& report) {
  std::vector<double> spreads;
  for (const auto& [key, values] : samples) {
    const auto& [index, size, inflight] = key;
    ModelPoint point = groups[index].key;
    point.size = size;
    point.inflight = inflight;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    point.median_s = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    point.low_s = sorted.front();
    point.high_s = sorted.back();
    point.rounds = static_cast<uint32_t>(n);
    spreads.push_back(point.Spread());
    if (point.Spread() > report.worst_spread) {
      report.worst_spread = point.Spread();
      report.worst_point =
          GroupLabel(point) + ", " + transport::FormatBytes(size) + " x" + std::to_string(inflight);
    }
    report.model.points.push_back(point);
  }
  if (!spreads.empty()) {
    std::nth_element(spreads.begin(), spreads.begin() + spreads.size() / 2, spreads.end());
    report.median_spread = spreads[spreads.size() / 2];
  }
}

}  // namespace

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
  if (!(options.budget_s > 0)) return Status::InvalidArgument("budget_s must be positive");
  return Status::Ok();
}

uint32_t CallsFor(uint64_t size, uint32_t inflight) {
  constexpr uint64_t kBytesPerPoint = 1ull << 20;
  const uint64_t by_bytes =
      std::clamp<uint64_t>(kBytesPerPoint / std::max<uint64_t>(size, 1), 1, 16);
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
  ARTUNE_ASSIGN_OR_RETURN(Connection connection, Connect(options));
  const std::vector<Group> groups = PlanGroups(options);
  PayloadCache payloads(*connection.channel, options.seed);
  std::mt19937_64 random(options.seed);
  Samples samples;
  MeasureReport report;
  uint32_t planned = options.rounds;
  for (uint32_t round = 1; round <= planned; ++round) {
    std::vector<size_t> order(groups.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), random);
    for (size_t done = 0; done < order.size(); ++done) {
      const Group& group = groups[order[done]];
      if (progress)
        progress({round, planned, done, groups.size(), GroupLabel(group.key), elapsed()});
      ARTUNE_RETURN_IF_ERROR(
          MeasureGroup(group, options, connection, payloads, random, order[done], samples));
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
  Summarise(groups, samples, report);
  return report;
}

}  // namespace artune::model
