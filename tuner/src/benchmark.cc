#include "artune/tuner/benchmark.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "artune/base/enum_names.h"

namespace artune::tuner {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kProgressInterval = std::chrono::milliseconds(100);
// How long past the measured window a run that has counted no call keeps issuing
// (at least; a longer run waits as long as it measured).
constexpr Clock::duration kStallGrace = std::chrono::seconds(5);

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
double ToSeconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double ToMicros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// The process's CPU time and the wall clock at one moment: two of them give the
// cores a window kept busy.
struct CpuMark {
  double cpu_s = 0;
  Clock::time_point at{};
  static CpuMark Now() { return CpuMark{ProcessCpuSeconds(), Clock::now()}; }
};
double CoresBetween(const CpuMark& from, const CpuMark& to) {
  const double wall = ToSeconds(to.at - from.at);
  return wall > 0 ? std::max(0.0, to.cpu_s - from.cpu_s) / wall : 0.0;
}

// Keeps at most `capacity` samples, a uniform subset of everything offered
// (reservoir sampling, Algorithm R) so long runs keep a bounded memory.
class Reservoir {
 public:
  explicit Reservoir(size_t capacity, uint64_t seed) : capacity_(capacity), rng_(seed) {}
  void Add(double sample) {
    ++seen_;
    if (samples_.size() < capacity_) {
      samples_.push_back(sample);
      return;
    }
    uint64_t slot = std::uniform_int_distribution<uint64_t>(0, seen_ - 1)(rng_);
    if (slot < capacity_) samples_[slot] = sample;
  }
  std::vector<double>& samples() { return samples_; }

 private:
  size_t capacity_;
  uint64_t seen_ = 0;
  std::mt19937_64 rng_;
  std::vector<double> samples_;
};

// Records the first failure of a run: a validation mismatch or a transport error.
struct Failure {
  bool corrupted = false;
  Status status;
  void Record(const Status& s) {
    if (!status.ok() || s.ok()) return;
    status = s;
    corrupted = s.code() == ErrorCode::kCorruption;
  }
};

void Finish(RunResult& result, const Payload& payload, Reservoir& latencies, double duration_s,
            const Failure& failure) {
  result.payload_bytes = payload.total_bytes();
  result.bytes_delivered = result.rpcs * payload.total_bytes();
  result.duration_s = duration_s;
  result.latency_us = Summarize(latencies.samples());
  if (duration_s > 0) {
    result.bandwidth_mbps = static_cast<double>(result.bytes_delivered) / duration_s / 1e6;
    result.rpcs_per_s = static_cast<double>(result.rpcs) / duration_s;
  }
  result.validated = !failure.corrupted;
  if (failure.corrupted) result.validation_error = failure.status.message();
}

// One calling slot of a windowed run: a channel and the payload prepared for it.
struct Slot {
  BenchChannel* channel;
  const PreparedPayload* payload;
};

// The shared state of a windowed run (bandwidth, ps): several driver threads, each
// keeping `inflight` calls going on each of its slots, completions counted by the
// time they arrive.
class WindowedRun {
 public:
  WindowedRun(const RunOptions& options, BenchMethod method, size_t drivers)
      : options_(options),
        method_(method),
        per_driver_capacity_(std::max<size_t>(1, options.max_latency_samples / drivers)) {
    start_ = Clock::now();
    measure_start_ = start_ + Seconds(options.warmup_s);
    measure_end_ = measure_start_ + Seconds(options.duration_s);
    // Issuing stops here whatever the peer does: a run whose calls never complete
    // ends instead of waiting for a first counted call forever.
    give_up_ = measure_end_ + std::max(kStallGrace, Seconds(options.duration_s));
    for (size_t d = 0; d < drivers; ++d) {
      drivers_.push_back(std::make_unique<Driver>(per_driver_capacity_, d + 1));
    }
  }

  // Runs the driver loop for driver `d` over `slots` on the calling thread.
  void Drive(size_t d, const std::vector<Slot>& slots) {
    Driver& driver = *drivers_[d];
    std::unique_lock lock(driver.mutex);
    for (size_t s = 0; s < slots.size(); ++s) {
      for (uint32_t i = 0; i < options_.inflight; ++i) driver.ready.push_back(s);
    }
    while (true) {
      bool stop = ShouldStop();
      if (!stop) {
        // Checked per call: calls that fail at once come straight back to `ready`,
        // and without the check this loop would reissue them forever.
        while (!driver.ready.empty() && !(stop = ShouldStop())) {
          size_t s = driver.ready.front();
          driver.ready.pop_front();
          ++driver.outstanding;
          lock.unlock();
          Issue(driver, s, slots[s]);
          lock.lock();
        }
      }
      if (stop) {
        driver.ready.clear();  // nothing more is issued; only drain
        if (driver.outstanding == 0) break;
      }
      // Wake for a completion, or at the end of the window to stop issuing.
      auto now = Clock::now();
      auto deadline = now < measure_end_ ? measure_end_ : now + kProgressInterval;
      driver.wake.wait_until(lock, deadline,
                             [&] { return !driver.ready.empty() || driver.outstanding == 0; });
    }
  }

  // Waits for the drivers, reporting progress on the calling thread.
  void ReportProgressUntil(const std::function<bool()>& done) {
    while (true) {
      {
        std::unique_lock lock(finished_mutex_);
        if (finished_wake_.wait_for(lock, kProgressInterval, done)) return;
      }
      if (!options_.progress) continue;
      Progress progress;
      auto now = Clock::now();
      progress.warming_up = now < measure_start_;
      progress.elapsed_s = ToSeconds(now - (progress.warming_up ? start_ : measure_start_));
      progress.phase_s = progress.warming_up ? options_.warmup_s : options_.duration_s;
      progress.rpcs = counted_.load();
      options_.progress(progress);
    }
  }
  void DriverFinished() {
    std::lock_guard lock(finished_mutex_);
    finished_wake_.notify_all();
  }
  std::mutex& finished_mutex() { return finished_mutex_; }

  Result<RunResult> Collect(const Payload& payload) {
    RunResult result;
    std::lock_guard lock(failure_mutex_);
    if (!failure_.status.ok() && !failure_.corrupted) return failure_.status;
    if (counted_.load() == 0 && failure_.status.ok()) {
      return Status::Timeout(
          "no call completed within the measured window and " +
          std::to_string(static_cast<int>(ToSeconds(give_up_ - measure_end_))) +
          " s after it: the peer is stalled (check it, or max_outstanding and timeout_ms)");
    }
    Reservoir merged(options_.max_latency_samples, 0);
    for (auto& driver : drivers_) {
      for (double sample : driver->latencies.samples()) merged.Add(sample);
    }
    result.rpcs = counted_.load();
    auto end = std::max(measure_end_, last_counted_);
    if (failure_.corrupted) end = std::min(end, failed_at_);
    Finish(result, payload, merged, std::max(0.0, ToSeconds(end - measure_start_)), failure_);
    {
      std::lock_guard count_lock(count_mutex_);
      if (cpu_end_taken_.load()) result.cpu_cores = CoresBetween(cpu_start_, cpu_end_);
    }
    return result;
  }

 private:
  struct Driver {
    Driver(size_t capacity, uint64_t seed) : latencies(capacity, seed) {}
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<size_t> ready;  // slots whose call completed and may be reissued
    size_t outstanding = 0;
    Reservoir latencies;
  };

  bool ShouldStop() {
    if (failed_.load()) return true;
    const auto now = Clock::now();
    const bool stop = (now >= measure_end_ && counted_.load() > 0) || now >= give_up_;
    // The measured phase's end, taken once by whichever driver sees it first; read
    // by Collect after the drivers are joined.
    if (stop && !cpu_end_taken_.exchange(true)) cpu_end_ = CpuMark::Now();
    return stop;
  }

  void Issue(Driver& driver, size_t s, const Slot& slot) {
    auto issued = Clock::now();
    slot.channel->CallAsync(method_, *slot.payload, [this, &driver, s, issued](Status status) {
      auto done = Clock::now();
      if (!status.ok()) {
        std::lock_guard lock(failure_mutex_);
        if (failure_.status.ok()) failed_at_ = done;
        failure_.Record(status);
        failed_.store(true);
      } else if (done >= measure_start_) {
        // Counted while inside the measured window, and past its end only until
        // the first call of the window completed (slow calls on short runs).
        std::lock_guard lock(count_mutex_);
        if (done <= measure_end_ || counted_.load() == 0) {
          if (counted_.load() == 0) cpu_start_ = CpuMark::Now();
          counted_.fetch_add(1);
          last_counted_ = std::max(last_counted_, done);
          std::lock_guard driver_lock(driver.mutex);
          driver.latencies.Add(ToMicros(done - issued));
        }
      }
      std::lock_guard lock(driver.mutex);
      --driver.outstanding;
      driver.ready.push_back(s);
      driver.wake.notify_one();
    });
  }

  const RunOptions& options_;
  BenchMethod method_;
  size_t per_driver_capacity_;
  Clock::time_point start_, measure_start_, measure_end_, give_up_;
  std::vector<std::unique_ptr<Driver>> drivers_;
  std::atomic<uint64_t> counted_{0};
  std::mutex count_mutex_;
  CpuMark cpu_start_;  // at the first counted completion (under count_mutex_)
  std::atomic<bool> cpu_end_taken_{false};
  CpuMark cpu_end_;
  Clock::time_point last_counted_{};
  std::atomic<bool> failed_{false};
  std::mutex failure_mutex_;
  Failure failure_;
  Clock::time_point failed_at_{};
  std::mutex finished_mutex_;
  std::condition_variable finished_wake_;
};

// Runs drivers (one thread each) over their slots and collects the result.
Result<RunResult> RunWindowed(const std::vector<std::vector<Slot>>& slots_by_driver,
                              const Payload& payload, BenchMethod method,
                              const RunOptions& options) {
  WindowedRun run(options, method, slots_by_driver.size());
  std::atomic<size_t> finished{0};
  std::vector<std::thread> threads;
  for (size_t d = 0; d < slots_by_driver.size(); ++d) {
    threads.emplace_back([&, d] {
      run.Drive(d, slots_by_driver[d]);
      {
        std::lock_guard lock(run.finished_mutex());
        finished.fetch_add(1);
      }
      run.DriverFinished();
    });
  }
  run.ReportProgressUntil([&] { return finished.load() == slots_by_driver.size(); });
  for (auto& t : threads) t.join();
  return run.Collect(payload);
}

}  // namespace

double ProcessCpuSeconds() {
  timespec cpu{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) != 0) return 0;
  return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) / 1e9;
}

constexpr std::array<EnumName<BenchmarkKind>, 3> kBenchmarkNames = {{
    {BenchmarkKind::kLatency, "latency"},
    {BenchmarkKind::kBandwidth, "bandwidth"},
    {BenchmarkKind::kPs, "ps"},
}};

std::string_view BenchmarkName(BenchmarkKind kind) { return NameOf(kBenchmarkNames, kind); }

Result<BenchmarkKind> ParseBenchmark(std::string_view text) {
  if (std::optional<BenchmarkKind> kind = ValueNamed(kBenchmarkNames, text)) return *kind;
  return Status::InvalidArgument("unknown benchmark '" + std::string(text) + "': use " +
                                 NameList(kBenchmarkNames, " or "));
}

Status ValidateRunOptions(const RunOptions& options) {
  if (!(options.duration_s > 0) || options.duration_s > 86400) {
    return Status::InvalidArgument("duration " + std::to_string(options.duration_s) +
                                   " s is out of range: use more than 0 and at most 86400 s");
  }
  if (!(options.warmup_s >= 0) || options.warmup_s > 3600) {
    return Status::InvalidArgument("warm-up " + std::to_string(options.warmup_s) +
                                   " s is out of range: use 0..3600 s");
  }
  if (options.inflight == 0 || options.inflight > 1024) {
    return Status::InvalidArgument("inflight " + std::to_string(options.inflight) +
                                   " is out of range: use 1..1024 calls");
  }
  if (options.servers == 0 || options.servers > 64) {
    return Status::InvalidArgument("servers " + std::to_string(options.servers) +
                                   " is out of range: use 1..64");
  }
  if (options.clients == 0 || options.clients > 64) {
    return Status::InvalidArgument("clients " + std::to_string(options.clients) +
                                   " is out of range: use 1..64");
  }
  if (options.max_latency_samples == 0) {
    return Status::InvalidArgument("max_latency_samples must be at least 1");
  }
  return Status::Ok();
}

Result<RunResult> RunLatency(BenchChannel& channel, const Payload& payload,
                             const RunOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateRunOptions(options));
  ARTUNE_ASSIGN_OR_RETURN(auto prepared, channel.Prepare(payload));
  Failure failure;
  Reservoir latencies(options.max_latency_samples, 1);
  RunResult result;
  const auto start = Clock::now();
  const auto measure_start = start + Seconds(options.warmup_s);
  const auto measure_end = measure_start + Seconds(options.duration_s);
  auto next_progress = start + kProgressInterval;
  auto last = start;
  bool measuring = false;
  CpuMark cpu_start;
  while (true) {
    auto issued = Clock::now();
    if (!measuring && issued >= measure_start) {
      measuring = true;
      cpu_start = CpuMark::Now();
    }
    if (measuring && issued >= measure_end && result.rpcs > 0) break;
    Status status = channel.Call(BenchMethod::kEcho, *prepared);
    last = Clock::now();
    if (!status.ok()) {
      failure.Record(status);
      if (!failure.corrupted) return status;
      break;
    }
    if (measuring) {
      ++result.rpcs;
      latencies.Add(ToMicros(last - issued));
    }
    if (options.progress && last >= next_progress) {
      next_progress = last + kProgressInterval;
      Progress progress;
      progress.warming_up = !measuring;
      progress.elapsed_s = ToSeconds(last - (measuring ? measure_start : start));
      progress.phase_s = measuring ? options.duration_s : options.warmup_s;
      progress.rpcs = result.rpcs;
      options.progress(progress);
    }
  }
  double duration = measuring ? ToSeconds(last - measure_start) : 0.0;
  Finish(result, payload, latencies, duration, failure);
  if (measuring) result.cpu_cores = CoresBetween(cpu_start, CpuMark::Now());
  return result;
}

Result<RunResult> RunBandwidth(BenchChannel& channel, const Payload& payload,
                               const RunOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateRunOptions(options));
  ARTUNE_ASSIGN_OR_RETURN(auto prepared, channel.Prepare(payload));
  return RunWindowed({{Slot{&channel, prepared.get()}}}, payload,
                     options.server_checksum ? BenchMethod::kAck : BenchMethod::kCount, options);
}

Result<RunResult> RunPs(const std::vector<std::vector<BenchChannel*>>& channels,
                        const Payload& payload, const RunOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateRunOptions(options));
  if (channels.empty() || channels.front().empty()) {
    return Status::InvalidArgument("the ps benchmark needs at least one client and one server");
  }
  std::vector<std::unique_ptr<PreparedPayload>> prepared;
  std::vector<std::vector<Slot>> slots(channels.size());
  for (size_t c = 0; c < channels.size(); ++c) {
    for (BenchChannel* channel : channels[c]) {
      ARTUNE_ASSIGN_OR_RETURN(auto p, channel->Prepare(payload));
      slots[c].push_back(Slot{channel, p.get()});
      prepared.push_back(std::move(p));
    }
  }
  return RunWindowed(slots, payload, BenchMethod::kEcho, options);
}

Result<RunResult> RunBenchmark(BenchTransport& transport,
                               const std::vector<std::string>& server_addresses,
                               const Payload& payload, const RunOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateRunOptions(options));
  if (server_addresses.empty()) {
    return Status::InvalidArgument("no server address to run the benchmark against");
  }
  if (options.kind != BenchmarkKind::kPs) {
    ARTUNE_ASSIGN_OR_RETURN(auto channel, transport.Connect(server_addresses.front()));
    return options.kind == BenchmarkKind::kLatency ? RunLatency(*channel, payload, options)
                                                   : RunBandwidth(*channel, payload, options);
  }
  if (server_addresses.size() < options.servers) {
    return Status::InvalidArgument("the ps benchmark wants " + std::to_string(options.servers) +
                                   " servers but " + std::to_string(server_addresses.size()) +
                                   " addresses were given");
  }
  std::vector<std::unique_ptr<BenchChannel>> owned;
  std::vector<std::vector<BenchChannel*>> channels(options.clients);
  for (uint32_t c = 0; c < options.clients; ++c) {
    for (uint32_t s = 0; s < options.servers; ++s) {
      ARTUNE_ASSIGN_OR_RETURN(auto channel, transport.Connect(server_addresses[s]));
      channels[c].push_back(channel.get());
      owned.push_back(std::move(channel));
    }
  }
  return RunPs(channels, payload, options);
}

Result<std::vector<std::unique_ptr<BenchServer>>> StartLoopbackServers(BenchTransport& transport,
                                                                       uint32_t count,
                                                                       const std::string& host) {
  std::vector<std::unique_ptr<BenchServer>> servers;
  for (uint32_t i = 0; i < count; ++i) {
    ARTUNE_ASSIGN_OR_RETURN(auto server, transport.StartServer(host + ":0"));
    servers.push_back(std::move(server));
  }
  return servers;
}

}  // namespace artune::tuner
