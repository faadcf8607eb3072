#include "artune/tuner/paired_compare.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "artune/transport/devices.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/bench_transport.h"

namespace artune::tuner {
namespace {

using transport::Config;

// A side while it is measured: on loopback its transport, server and channel live
// for the whole comparison; with a peer it uses the connection both sides share.
struct LiveSide {
  CompareSide* side;
  std::unique_ptr<BenchTransport> transport;
  std::vector<std::unique_ptr<BenchServer>> servers;
  std::unique_ptr<BenchChannel> own_channel;
  BenchChannel* channel = nullptr;  // own_channel, or the shared peer connection
  bool parked = false;              // reconfigured to event polling while the other side runs
};

// The one connection to an `artune serve` peer that both sides are measured over:
// the client's transport starts with the baseline's start-time knobs, which the
// tuned side shares (CheckComparableOverOneConnection).
struct PeerConnection {
  std::unique_ptr<BenchTransport> transport;
  std::unique_ptr<BenchChannel> channel;  // closed before the transport stops
};

// Both sides' transports live in this process for the whole comparison. One that
// busy-polls would spin while the other side is measured and take its CPU: in the
// lab a default measured beside a busy-polling tuned side ran 30-60 % slower than
// beside an event-polling one. So the side not being measured is parked on event
// polling (live, its threads sleep) and gets its own config back before its turn.
Status Park(LiveSide& live, bool parked) {
  const Config& own = live.side->spec.config;
  if (own.polling != transport::PollingMode::kBusy || live.parked == parked) return Status::Ok();
  Config config = own;
  if (parked) config.polling = transport::PollingMode::kEvent;
  ARTUNE_RETURN_IF_ERROR(live.channel->Reconfigure(config).WithContext(
      std::string(parked ? "parking" : "resuming") + " the " + live.side->spec.name + " side"));
  live.parked = parked;
  return Status::Ok();
}

Status Start(LiveSide& live) {
  const Config& config = live.side->spec.config;
  live.transport = MakeArtuneBenchTransport(config);
  ARTUNE_ASSIGN_OR_RETURN(const std::string host, transport::LocalListenHost(config));
  ARTUNE_ASSIGN_OR_RETURN(live.servers, StartLoopbackServers(*live.transport, 1, host));
  ARTUNE_ASSIGN_OR_RETURN(live.own_channel, live.transport->Connect(live.servers[0]->address()));
  live.channel = live.own_channel.get();
  live.side->fabric = live.transport->fabric();
  return Status::Ok();
}

Status ConnectToPeer(const std::string& peer, LiveSide& baseline, LiveSide& tuned,
                     PeerConnection& connection) {
  connection.transport = MakeArtuneBenchTransport(baseline.side->spec.config);
  ARTUNE_ASSIGN_OR_RETURN(const std::string address, ServerAddressFor("artune", peer, 0));
  auto channel = connection.transport->Connect(address);
  if (!channel.ok()) {
    return channel.status().WithContext("connecting to `artune serve` at " + peer +
                                        " (is it running, and is its token readable here?)");
  }
  connection.channel = std::move(*channel);
  for (LiveSide* live : {&baseline, &tuned}) {
    live->channel = connection.channel.get();
    live->side->fabric = connection.transport->fabric();
  }
  return Status::Ok();
}

// Gets `live` ready to be measured: on loopback the other side is parked and this one
// resumed; over a peer connection this side's config is pushed to both ends.
Status MakeReady(LiveSide& live, LiveSide& other, bool over_peer) {
  if (!over_peer) {
    ARTUNE_RETURN_IF_ERROR(Park(other, true));
    return Park(live, false);
  }
  return live.channel->Reconfigure(live.side->spec.config)
      .WithContext("pushing the " + live.side->spec.name + " config to both ends");
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

CompareSideSummary Summarize(const CompareSide& side) {
  CompareSideSummary summary;
  std::vector<double> times, p50, p99, mbps;
  for (const RunResult& run : side.runs) {
    times.push_back(PassMilliseconds(run));
    p50.push_back(run.latency_us.p50);
    p99.push_back(run.latency_us.p99);
    mbps.push_back(run.bandwidth_mbps);
    summary.calls += run.rpcs;
    if (!run.validated && summary.validated) {
      summary.validated = false;
      summary.validation_error = run.validation_error;
    }
  }
  summary.workload_ms = Median(times);
  summary.p50_us = Median(p50);
  summary.p99_us = Median(p99);
  summary.mbps = Median(mbps);
  summary.cpu_cores = Median(side.cpu_cores);
  return summary;
}

}  // namespace

Status ValidatePairedCompareOptions(const PairedCompareOptions& options) {
  if (options.repeats == 0 || options.replay.rounds == 0) {
    return Status::InvalidArgument("--repeats and --rounds must be at least 1");
  }
  if (!(options.replay.min_duration_s >= 0)) {
    return Status::InvalidArgument("--duration must be 0 (just --rounds passes) or more seconds");
  }
  return Status::Ok();
}

Status CheckComparableOverOneConnection(const Config& baseline, const Config& tuned) {
  for (const transport::Knob& knob : transport::Knobs()) {
    if (knob.live || knob.get(baseline) == knob.get(tuned)) continue;
    return Status::InvalidArgument(
        "with --peer both configs are pushed live over one connection, but they differ in " +
        std::string(knob.name) + " (" + transport::FormatKnobValue(knob, knob.get(baseline)) +
        " against " + transport::FormatKnobValue(knob, knob.get(tuned)) +
        "), which is fixed when a transport starts: set it the same in both files, or compare "
        "on loopback without --peer");
  }
  return Status::Ok();
}

double PassMilliseconds(const RunResult& run) {
  return run.passes == 0 ? 0 : run.duration_s * 1000.0 / run.passes;
}

Result<PairedCompareResult> RunPairedCompare(const CompareSideSpec& baseline_spec,
                                             const CompareSideSpec& tuned_spec,
                                             const Workload& workload,
                                             const PairedCompareOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidatePairedCompareOptions(options));
  PairedCompareResult result;
  result.baseline.spec = baseline_spec;
  result.tuned.spec = tuned_spec;
  const bool over_peer = !options.peer.empty();
  if (over_peer) {
    ARTUNE_RETURN_IF_ERROR(
        CheckComparableOverOneConnection(baseline_spec.config, tuned_spec.config));
  }
  PeerConnection peer_connection;  // outlives the sides that point at its channel
  LiveSide baseline{&result.baseline};
  LiveSide tuned{&result.tuned};
  if (over_peer) {
    ARTUNE_RETURN_IF_ERROR(ConnectToPeer(options.peer, baseline, tuned, peer_connection));
  }
  for (LiveSide* live : {&baseline, &tuned}) {
    const Status started = over_peer ? Status::Ok() : Start(*live);
    if (!started.ok()) {
      return started.WithContext(live->side->spec.name + " config (" + live->side->spec.source +
                                 ")");
    }
  }
  for (uint32_t repeat = 0; repeat < options.repeats; ++repeat) {
    // A B, B A, A B, ...: whichever side runs second in a pair meets a warmer machine
    // (caches, CPU frequency, the other side's leftovers); alternating cancels that.
    const bool baseline_first = repeat % 2 == 0;
    for (LiveSide* live :
         {baseline_first ? &baseline : &tuned, baseline_first ? &tuned : &baseline}) {
      CompareSide& side = *live->side;
      if (options.progress) options.progress(repeat, side.spec.name);
      ARTUNE_RETURN_IF_ERROR(MakeReady(*live, live == &baseline ? tuned : baseline, over_peer));
      const double cpu_before = ProcessCpuSeconds();
      const auto wall_before = std::chrono::steady_clock::now();
      auto run = RunReplay(*live->channel, workload, options.replay);
      if (!run.ok()) return run.status().WithContext(side.spec.name + " config replay");
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
      side.cpu_cores.push_back(wall > 0 ? (ProcessCpuSeconds() - cpu_before) / wall : 0);
      side.runs.push_back(*run);
    }
  }
  for (LiveSide* live : {&baseline, &tuned}) {
    for (auto& server : live->servers) server->Shutdown();
  }

  result.baseline.summary = Summarize(result.baseline);
  result.tuned.summary = Summarize(result.tuned);
  const double base_ms = result.baseline.summary.workload_ms;
  const double tuned_ms = result.tuned.summary.workload_ms;
  result.speedup = tuned_ms > 0 ? base_ms / tuned_ms : 0;
  for (size_t i = 0; i < result.baseline.runs.size() && i < result.tuned.runs.size(); ++i) {
    const double pass_ms = PassMilliseconds(result.tuned.runs[i]);
    if (pass_ms > 0) {
      result.paired_speedups.push_back(PassMilliseconds(result.baseline.runs[i]) / pass_ms);
    }
  }
  const auto [lowest, highest] =
      std::minmax_element(result.paired_speedups.begin(), result.paired_speedups.end());
  result.paired_low = result.paired_speedups.empty() ? 0 : *lowest;
  result.paired_high = result.paired_speedups.empty() ? 0 : *highest;
  result.verdict = JudgePairedSpeedups(result.paired_speedups);
  return result;
}

}  // namespace artune::tuner
