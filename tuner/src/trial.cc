#include "artune/tuner/trial.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>

#include "artune/base/enum_names.h"
#include "artune/transport/devices.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/stats.h"

namespace artune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

bool IsSchemeWorkload(const Workload& workload) {
  return workload.description.rfind("scheme:", 0) == 0;
}

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return QuantileOfSorted(values, 0.5);
}

class LiveTrialTarget final : public TrialTarget {
 public:
  LiveTrialTarget(std::unique_ptr<BenchTransport> transport,
                  std::vector<std::unique_ptr<BenchServer>> servers,
                  std::vector<std::unique_ptr<BenchChannel>> channels, size_t server_count,
                  std::string peer, TrialOptions options)
      : transport_(std::move(transport)),
        servers_(std::move(servers)),
        channels_(std::move(channels)),
        server_count_(server_count),
        peer_(std::move(peer)),
        options_(options) {}

  ~LiveTrialTarget() override {
    channels_.clear();  // close client connections before the servers stop
    servers_.clear();
  }

  std::string fabric() const override { return transport_->fabric(); }

 protected:
  // One measurement-length run under `config` (both ends reconfigured), validated;
  // cheaper than a whole trial (no warm-up, no repeats).
  Result<TrialMeasurement> WarmupPass(const transport::Config& config,
                                      const Workload& workload) override {
    TrialMeasurement pass;
    for (auto& channel : channels_) {
      Status status = channel->Reconfigure(config);
      if (!status.ok()) {
        pass.status = db::TrialStatus::kFailed;
        pass.error = "reconfigure: " + status.message();
        return pass;
      }
    }
    Result<RunResult> run = RunOnce(workload, options_, options_.duration_s, false);
    if (!run.ok()) {
      pass.status = db::TrialStatus::kFailed;
      pass.error = run.status().message();
      return pass;
    }
    if (!run->validated) {
      pass.status = db::TrialStatus::kInvalid;
      pass.error = run->validation_error;
      return pass;
    }
    pass.status = db::TrialStatus::kOk;
    pass.validated = true;
    pass.objective = ObjectiveValue(options_, *run);
    return pass;
  }

 public:
  std::string peer() const override { return peer_.empty() ? "loopback" : peer_; }

  Result<TrialMeasurement> Measure(const transport::Config& config,
                                   const Workload& workload) override {
    const auto started = Clock::now();
    TrialMeasurement measurement;
    auto finish = [&](db::TrialStatus status, std::string error) {
      measurement.status = status;
      measurement.error = std::move(error);
      measurement.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
      return measurement;
    };
    for (auto& channel : channels_) {
      Status status = channel->Reconfigure(config);
      if (!status.ok()) return finish(db::TrialStatus::kFailed, "reconfigure: " + status.message());
    }
    measurement.config = channels_.front()->AgreedConfig();

    // Warm-up: one short run (its replies are validated too).
    {
      TrialOptions warm = options_;
      Result<RunResult> run = RunOnce(workload, warm, options_.warmup_s, /*warmup=*/true);
      if (!run.ok()) return finish(db::TrialStatus::kFailed, run.status().message());
      if (!run->validated) return finish(db::TrialStatus::kInvalid, run->validation_error);
    }

    std::vector<double> values, p50s, p99s, bandwidths, rates;
    uint32_t rounds = 0;
    MedianEstimate estimate;
    while (true) {
      for (uint32_t i = 0; i < options_.repeats; ++i) {
        Result<RunResult> run = RunOnce(workload, options_, options_.duration_s, false);
        if (!run.ok()) return finish(db::TrialStatus::kFailed, run.status().message());
        if (!run->validated) return finish(db::TrialStatus::kInvalid, run->validation_error);
        values.push_back(ObjectiveValue(options_, *run));
        p50s.push_back(run->latency_us.p50);
        p99s.push_back(run->latency_us.p99);
        bandwidths.push_back(run->bandwidth_mbps);
        rates.push_back(run->rpcs_per_s);
      }
      ++rounds;
      estimate = MedianWithConfidence(values);
      const double spread =
          estimate.median > 0 ? (estimate.high - estimate.low) / estimate.median : 0.0;
      if (spread <= options_.unstable_spread || rounds > options_.max_remeasure) break;
    }
    measurement.objective = estimate.median;
    measurement.ci_low = estimate.low;
    measurement.ci_high = estimate.high;
    measurement.samples = values.size();
    measurement.values = values;
    measurement.remeasured = rounds - 1;
    measurement.validated = true;
    measurement.metrics = {{"p50_us", MedianOf(p50s)},
                           {"p99_us", MedianOf(p99s)},
                           {"bandwidth_mbps", MedianOf(bandwidths)},
                           {"rpcs_per_s", MedianOf(rates)}};
    return finish(db::TrialStatus::kOk, "");
  }

 private:
  Result<RunResult> RunOnce(const Workload& workload, const TrialOptions& options, double seconds,
                            bool warmup) {
    const bool scheme = IsSchemeWorkload(workload);
    if (options.objective == Objective::kWorkloadTime || !scheme) {
      ReplayRunOptions replay;
      const bool latency = options.objective == Objective::kLatencyP50 ||
                           options.objective == Objective::kLatencyP99;
      replay.inflight = latency ? 1 : options.inflight;
      replay.warmup_rounds = 0;
      if (options.replay_fixed_rounds) {
        replay.rounds = warmup ? 1 : kLegacyReplayRounds;
      } else {
        replay.rounds = warmup ? 1 : options.replay_rounds;
        replay.min_duration_s = seconds;
      }
      return RunReplay(*channels_.front(), workload, replay);
    }
    RunOptions run;
    run.warmup_s = 0.001;  // the trial warmed up with a run of its own
    run.duration_s = std::max(seconds, 0.01);
    run.inflight = options.inflight;
    run.servers = options.ps_servers;
    run.clients = options.ps_clients;
    const Payload& payload = workload.messages.front();
    switch (options.objective) {
      case Objective::kLatencyP50:
      case Objective::kLatencyP99:
        run.kind = BenchmarkKind::kLatency;
        return RunLatency(*channels_.front(), payload, run);
      case Objective::kBandwidth:
        run.kind = BenchmarkKind::kBandwidth;
        return RunBandwidth(*channels_.front(), payload, run);
      case Objective::kPsThroughput: {
        run.kind = BenchmarkKind::kPs;
        std::vector<std::vector<BenchChannel*>> grid(options.ps_clients);
        for (uint32_t c = 0; c < options.ps_clients; ++c) {
          for (size_t s = 0; s < server_count_; ++s) {
            grid[c].push_back(channels_[c * server_count_ + s].get());
          }
        }
        return RunPs(grid, payload, run);
      }
      case Objective::kWorkloadTime:
        break;
    }
    return Status::Internal("objective without a runner");
  }

  std::unique_ptr<BenchTransport> transport_;
  std::vector<std::unique_ptr<BenchServer>> servers_;
  std::vector<std::unique_ptr<BenchChannel>> channels_;  // ps: client-major
  size_t server_count_;
  std::string peer_;
  TrialOptions options_;
};

}  // namespace

double ObjectiveValue(const TrialOptions& options, const RunResult& run) {
  switch (options.objective) {
    case Objective::kLatencyP50:
      return run.latency_us.p50;
    case Objective::kLatencyP99:
      return run.latency_us.p99;
    case Objective::kBandwidth:
      return run.bandwidth_mbps;
    case Objective::kPsThroughput:
      return run.rpcs_per_s;
    case Objective::kWorkloadTime:
      if (options.replay_fixed_rounds || run.passes == 0) return run.duration_s;
      return run.duration_s / run.passes;
  }
  return 0;
}

constexpr std::array<EnumName<Objective>, 5> kObjectiveNames = {{
    {Objective::kLatencyP50, "latency-p50"},
    {Objective::kLatencyP99, "latency-p99"},
    {Objective::kBandwidth, "bandwidth"},
    {Objective::kPsThroughput, "ps-throughput"},
    {Objective::kWorkloadTime, "workload-time"},
}};

constexpr std::array<EnumName<Objective>, 5> kObjectiveUnits = {{
    {Objective::kLatencyP50, "us"},
    {Objective::kLatencyP99, "us"},
    {Objective::kBandwidth, "MB/s"},
    {Objective::kPsThroughput, "RPC/s"},
    {Objective::kWorkloadTime, "s"},
}};

std::string_view ObjectiveName(Objective objective) { return NameOf(kObjectiveNames, objective); }

Result<Objective> ParseObjective(std::string_view text) {
  if (std::optional<Objective> objective = ValueNamed(kObjectiveNames, text)) return *objective;
  return Status::InvalidArgument("objective \"" + std::string(text) + "\" is not one of " +
                                 NameList(kObjectiveNames));
}

std::string_view ObjectiveUnit(Objective objective) {
  return NameOf(kObjectiveUnits, objective, "");
}

bool LowerIsBetter(Objective objective) {
  return objective != Objective::kBandwidth && objective != Objective::kPsThroughput;
}

Status ValidateTrialOptions(const TrialOptions& options) {
  if (options.repeats == 0) return Status::InvalidArgument("repeats is 0: measure at least once");
  if (!(options.duration_s > 0)) {
    return Status::InvalidArgument("trial duration " + std::to_string(options.duration_s) +
                                   " s is not positive");
  }
  if (options.warmup_s < 0) return Status::InvalidArgument("trial warm-up is negative");
  if (options.inflight == 0 || options.ps_servers == 0 || options.ps_clients == 0 ||
      options.replay_rounds == 0) {
    return Status::InvalidArgument(
        "inflight, ps servers, ps clients and replay rounds must be >= 1");
  }
  if (options.ps_servers > 64 || options.ps_clients > 64) {
    return Status::InvalidArgument("at most 64 ps servers and clients");
  }
  return Status::Ok();
}

Status ValidateWarmupOptions(const WarmupOptions& options) {
  if (!(options.tolerance >= 0)) {
    return Status::InvalidArgument("warm-up tolerance " + std::to_string(options.tolerance) +
                                   " is negative: use a relative tolerance such as 0.1");
  }
  if (options.min_passes < 2) {
    return Status::InvalidArgument("warm-up min_passes " + std::to_string(options.min_passes) +
                                   " is below 2: agreement needs two passes");
  }
  if (options.max_passes < options.min_passes) {
    return Status::InvalidArgument("warm-up max_passes " + std::to_string(options.max_passes) +
                                   " is below min_passes " + std::to_string(options.min_passes));
  }
  if (options.max_seconds < 0) {
    return Status::InvalidArgument("warm-up max_seconds " + std::to_string(options.max_seconds) +
                                   " is negative");
  }
  return Status::Ok();
}

bool WithinTolerance(double a, double b, double tolerance) {
  const double scale = std::max(std::abs(a), std::abs(b));
  if (scale == 0) return true;
  return std::abs(a - b) / scale <= tolerance;
}

Result<WarmupReport> TrialTarget::WarmUp(const transport::Config& config, const Workload& workload,
                                         const WarmupOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateWarmupOptions(options));
  const auto started = Clock::now();
  WarmupReport report;
  std::optional<double> previous;
  while (report.passes < options.max_passes) {
    ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement pass, WarmupPass(config, workload));
    ++report.passes;
    report.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (pass.status != db::TrialStatus::kOk) {
      report.error = std::string(db::TrialStatusName(pass.status)) + ": " + pass.error;
      break;
    }
    report.last_value = pass.objective;
    report.stable = previous && WithinTolerance(*previous, pass.objective, options.tolerance);
    previous = pass.objective;
    if (report.stable && report.passes >= options.min_passes) break;
    if (report.seconds >= options.max_seconds) break;
  }
  return report;
}

Result<std::unique_ptr<TrialTarget>> TrialTarget::Open(const transport::Config& base,
                                                       const std::string& peer,
                                                       const TrialOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateTrialOptions(options));
  std::unique_ptr<BenchTransport> bench = MakeArtuneBenchTransport(base);
  const bool ps = options.objective == Objective::kPsThroughput;
  const uint32_t server_count = ps ? options.ps_servers : 1;
  const uint32_t client_count = ps ? options.ps_clients : 1;
  std::vector<std::unique_ptr<BenchServer>> servers;
  std::vector<std::string> addresses;
  if (peer.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(const std::string host, transport::LocalListenHost(base));
    ARTUNE_ASSIGN_OR_RETURN(servers, StartLoopbackServers(*bench, server_count, host));
    for (const auto& server : servers) addresses.push_back(server->address());
  } else {
    for (uint32_t s = 0; s < server_count; ++s) {
      ARTUNE_ASSIGN_OR_RETURN(std::string address,
                              ServerAddressFor("artune", peer, static_cast<int>(s)));
      addresses.push_back(address);
    }
  }
  std::vector<std::unique_ptr<BenchChannel>> channels;
  for (uint32_t c = 0; c < client_count; ++c) {
    for (const std::string& address : addresses) {
      ARTUNE_ASSIGN_OR_RETURN(auto channel, bench->Connect(address));
      channels.push_back(std::move(channel));
    }
  }
  return std::unique_ptr<TrialTarget>(new LiveTrialTarget(
      std::move(bench), std::move(servers), std::move(channels), server_count, peer, options));
}

}  // namespace artune::tuner
