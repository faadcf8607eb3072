// One trial of a sweep: reconfigure both ends to a config (live, through the
// control plane), warm up, measure the objective `repeats` times, and summarise
// with the median and its order-statistic confidence interval (stats.h). A trial
// whose interval is wider than `unstable_spread` x median is measured again (up to
// `max_remeasure` more rounds of `repeats`). Every payload is validated on every
// call: a config that corrupts data gives status "invalid" and never wins.
//
// The TrialTarget holds what trials run over for the whole sweep: loopback servers
// started in-process (no peer) or connections to `artune serve` at a peer, and the
// channels the objective needs; nothing restarts between trials.
//
// Threading: a TrialTarget is used from one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

enum class Objective : uint8_t {
  kLatencyP50,
  kLatencyP99,
  kBandwidth,
  kPsThroughput,
  kWorkloadTime
};
// "latency-p50", "latency-p99", "bandwidth", "ps-throughput", "workload-time".
std::string_view ObjectiveName(Objective objective);
Result<Objective> ParseObjective(std::string_view text);
// "us", "MB/s", "RPC/s", "s".
std::string_view ObjectiveUnit(Objective objective);
// Latencies and times are minimised, throughputs maximised.
bool LowerIsBetter(Objective objective);

// Passes per workload measurement of sweeps stored before workload-time was per pass.
inline constexpr uint32_t kLegacyReplayRounds = 2;

struct TrialOptions {
  Objective objective = Objective::kLatencyP50;
  uint32_t repeats = 3;     // measurements per round (>= 1)
  double warmup_s = 0.2;    // before the first measurement of a trial
  double duration_s = 0.5;  // of one measurement (a replay: passes until it has passed)
  uint32_t inflight = 8;    // bandwidth, ps, workload-time
  uint32_t ps_servers = 2;  // ps-throughput
  uint32_t ps_clients = 2;
  uint32_t replay_rounds = 1;  // workload passes per measurement, at least
  // workload-time is the seconds of one pass, averaged over the passes that fill
  // duration_s. Sweeps stored before that measured exactly kLegacyReplayRounds
  // passes and stored their total; resuming one keeps that measure (true: every
  // measurement is kLegacyReplayRounds passes, whatever replay_rounds and
  // duration_s say), so its trials stay comparable.
  bool replay_fixed_rounds = false;
  double unstable_spread = 0.2;  // (ci_high - ci_low) / median above this: re-measure
  uint32_t max_remeasure = 1;
};
// kInvalidArgument naming the field for zero repeats, non-positive durations, ...
Status ValidateTrialOptions(const TrialOptions& options);

// The objective `options.objective` of one measured run: workload-time is the
// seconds of one pass (the run's duration over its passes), or the whole duration
// with replay_fixed_rounds.
double ObjectiveValue(const TrialOptions& options, const RunResult& run);

struct TrialMeasurement {
  db::TrialStatus status = db::TrialStatus::kFailed;  // until measured
  double objective = 0, ci_low = 0, ci_high = 0;
  uint64_t samples = 0;
  // The objective of every measured run behind `objective` (samples of them); empty
  // from a target that does not report them. The sweep's final round pools them.
  std::vector<double> values;
  uint64_t remeasured = 0;
  bool validated = false;
  std::string error;
  double duration_s = 0;
  std::map<std::string, double> metrics;      // p50_us, p99_us, bandwidth_mbps, rpcs_per_s
  std::map<std::string, std::string> config;  // the agreed config, knob -> text
};

// Warming the whole path (connections, allocator, caches, both ends) before the
// first measured trial of a sweep: unmeasured passes under one config until two
// consecutive passes agree within `tolerance` (relative), bounded in count and time.
struct WarmupOptions {
  double tolerance = 0.1;     // |a - b| / max(a, b) at or below this: stable
  uint32_t min_passes = 2;    // never fewer (agreement needs two)
  uint32_t max_passes = 12;   // stop here even when not stable
  double max_seconds = 15.0;  // or when this much wall time has gone
};
// kInvalidArgument naming the field for a negative tolerance, max_passes < min_passes, ...
Status ValidateWarmupOptions(const WarmupOptions& options);

struct WarmupReport {
  uint32_t passes = 0;
  bool stable = false;    // the last two passes agreed within the tolerance
  double last_value = 0;  // the objective of the last pass
  double seconds = 0;
  std::string error;  // a pass that failed or was invalid ends the warm-up; "" otherwise
};

// True when two objective values agree within `tolerance` relative to the larger.
bool WithinTolerance(double a, double b, double tolerance);

class TrialTarget {
 public:
  // `base` is the config both ends start with (and the server side keeps for what a
  // trial does not set). `peer` empty: servers on 127.0.0.1 in this process; else
  // the address of `artune serve` ("host:port"). Errors: connection failures (with
  // the address). Over a capture workload every objective comes from RunReplay
  // (ps-throughput: its RPC/s on one channel).
  static Result<std::unique_ptr<TrialTarget>> Open(const transport::Config& base,
                                                   const std::string& peer,
                                                   const TrialOptions& options);
  virtual ~TrialTarget() = default;

  virtual std::string fabric() const = 0;  // "tcp" | "verbs"
  virtual std::string peer() const = 0;    // the address, or "loopback"

  // Reconfigures every channel (both ends) to `config`, then measures `workload`.
  // A config either end refuses, or a transport failure during the trial, gives
  // status "failed" with the reason (not an error Status: the sweep goes on); a
  // validation mismatch gives "invalid". Errors only when the target is unusable.
  virtual Result<TrialMeasurement> Measure(const transport::Config& config,
                                           const Workload& workload) = 0;

  // Runs `workload` under `config` unmeasured until it is stable (WarmupOptions).
  // A pass that fails or is invalid ends the warm-up with `error` set (the trials
  // that follow report it themselves); errors only when the target is unusable.
  // Each pass is WarmupPass: by default a whole Measure call; targets with a
  // cheaper pass override that.
  Result<WarmupReport> WarmUp(const transport::Config& config, const Workload& workload,
                              const WarmupOptions& options);

 protected:
  // One unmeasured pass for WarmUp: the objective value, or a failed/invalid
  // measurement (status other than kOk) carried in the result.
  virtual Result<TrialMeasurement> WarmupPass(const transport::Config& config,
                                              const Workload& workload) {
    return Measure(config, workload);
  }
};

}  // namespace artune::tuner
