// Tracing overhead benchmark: runs iovec_traffic's loopback throughput modes
// untraced, under the ebpf backend and under the preload backend, alternating, and
// prints the median of each with the loss relative to untraced and the events lost.
//   stream:   sendmsg of 256 x 4 KiB iovecs (1 MiB per call), bytes/s
//   pingpong: 64-byte request (sendmsg, 2 iovecs) / response (send), round trips/s
// Usage: trace_overhead_bench [SECONDS_PER_RUN=3] [REPEATS=3]
// The ebpf rows need root; without it they are skipped with the reason.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "artune/probes/backend.h"
#include "artune/probes/session.h"

using namespace artune::probes;  // NOLINT: a benchmark program
using artune::Status;

namespace {

struct Measurement {
  double rate = 0;
  double cpu_per_unit = 0;  // the workload process's CPU seconds (user + sys) per unit
  uint64_t events = 0;
  uint64_t lost = 0;
};

// CPU seconds of every reaped child so far. The ebpf handlers run in the traced
// process (its sys time) and the preload wrappers in it too (its user time), so the
// child's CPU per unit of work shows the tracing cost even when a loaded machine
// makes wall-clock throughput too noisy to.
double ChildrenCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void SetCpuPerUnit(Measurement& m, double cpu_seconds, double seconds) {
  const double units = m.rate * seconds;
  m.cpu_per_unit = units > 0 ? cpu_seconds / units : 0;
}

// The program and arguments of a workload (mode: grpc, stream, pingpong).
std::vector<std::string> WorkloadCommand(const std::string& mode, double seconds, bool wait) {
  std::vector<std::string> command;
  if (mode == "grpc") {
    command = {ARTUNE_GRPC_TENSORS_HELPER, "bench", std::to_string(seconds)};
  } else {
    command = {ARTUNE_IOVEC_TRAFFIC_HELPER, mode, std::to_string(seconds)};
  }
  if (wait) command.push_back("--wait");
  return command;
}

SessionOptions TracedSession() {
  SessionOptions options;
  options.attribute_iovecs = true;
  return options;
}

double ParseRate(const std::string& output) {
  const auto space = output.find(' ');
  return space == std::string::npos ? 0 : std::atof(output.c_str() + space + 1);
}

// Runs the helper with its stdout in a pipe; `traced` (optional) attaches first.
Measurement RunUntracedOrEbpf(const std::string& mode, double seconds, bool ebpf, bool decode) {
  int out[2], in[2];
  if (pipe(out) != 0 || pipe(in) != 0) return {};
  const double cpu_before = ChildrenCpuSeconds();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    close(out[0]);
    close(in[1]);
    std::vector<std::string> command = WorkloadCommand(mode, seconds, /*wait=*/true);
    std::vector<char*> argv;
    for (auto& word : command) argv.push_back(word.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  Measurement result;
  std::unique_ptr<CaptureBackend> backend;
  if (ebpf) {
    BackendOptions options;
    options.kind = BackendKind::kEbpf;
    options.ebpf.pid = static_cast<uint32_t>(pid);
    options.ebpf.decode = decode;
    auto created = CreateCaptureBackend(options);
    Status started = created.ok() ? (*created)->Start() : created.status();
    if (!started.ok()) {
      std::fprintf(stderr, "ebpf: %s\n", started.ToString().c_str());
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return {};
    }
    backend = std::move(*created);
  }
  std::atomic<bool> exited{false};
  std::string output;
  std::thread reader([&] {
    char buffer[256];
    ssize_t n;
    while ((n = read(out[0], buffer, sizeof(buffer))) > 0) output.append(buffer, n);
    waitpid(pid, nullptr, 0);
    exited = true;
  });
  if (write(in[1], "g", 1) != 1) std::perror("go");
  if (backend) {
    ProbeSession sink(TracedSession());
    StopCondition stop;
    stop.stop_requested = &exited;
    (void)backend->Run(sink, stop);
    result.events = backend->counters().events_seen;
    result.lost = backend->counters().events_lost;
  }
  reader.join();
  close(out[0]);
  close(in[1]);
  result.rate = ParseRate(output);
  SetCpuPerUnit(result, ChildrenCpuSeconds() - cpu_before, seconds);
  return result;
}

Measurement RunPreload(const std::string& mode, double seconds, bool capture_bytes) {
  int out[2];
  if (pipe(out) != 0) return {};
  // The helper's stdout goes to our pipe: preserve it across the backend's spawn.
  const int saved_stdout = dup(STDOUT_FILENO);
  dup2(out[1], STDOUT_FILENO);
  close(out[1]);
  const double cpu_before = ChildrenCpuSeconds();
  BackendOptions options;
  options.kind = BackendKind::kPreload;
  options.preload.command = WorkloadCommand(mode, seconds, /*wait=*/false);
  options.preload.capture_bytes = capture_bytes;
  auto created = CreateCaptureBackend(options);
  Status started = created.ok() ? (*created)->Start() : created.status();
  dup2(saved_stdout, STDOUT_FILENO);
  close(saved_stdout);
  if (!started.ok()) {
    std::fprintf(stderr, "preload: %s\n", started.ToString().c_str());
    close(out[0]);
    return {};
  }
  std::string output;
  std::thread reader([&] {
    char buffer[256];
    ssize_t n;
    while ((n = read(out[0], buffer, sizeof(buffer))) > 0) output.append(buffer, n);
  });
  ProbeSession sink(TracedSession());
  StopCondition stop;
  (void)(*created)->Run(sink, stop);
  reader.join();
  close(out[0]);
  Measurement result;
  result.rate = ParseRate(output);
  SetCpuPerUnit(result, ChildrenCpuSeconds() - cpu_before, seconds);
  result.events = (*created)->counters().events_seen;
  result.lost = (*created)->counters().events_lost;
  return result;
}

// The median rate and, separately, the median CPU per unit.
Measurement Median(std::vector<Measurement> runs) {
  std::sort(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.rate < b.rate; });
  Measurement median = runs[runs.size() / 2];
  std::sort(runs.begin(), runs.end(),
            [](auto& a, auto& b) { return a.cpu_per_unit < b.cpu_per_unit; });
  median.cpu_per_unit = runs[runs.size() / 2].cpu_per_unit;
  return median;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool root = geteuid() == 0;
  std::vector<std::string> modes;
  for (int i = 3; i < argc; ++i) modes.push_back(argv[i]);
  if (modes.empty()) modes = {"grpc", "stream", "pingpong"};
  for (const std::string& mode : modes) {
    std::vector<Measurement> base, ebpf, ebpf_decode, preload, preload_bytes;
    for (int r = 0; r < repeats; ++r) {
      base.push_back(RunUntracedOrEbpf(mode, seconds, false, false));
      if (root) ebpf.push_back(RunUntracedOrEbpf(mode, seconds, true, false));
      if (root) ebpf_decode.push_back(RunUntracedOrEbpf(mode, seconds, true, true));
      preload.push_back(RunPreload(mode, seconds, false));
      preload_bytes.push_back(RunPreload(mode, seconds, true));
    }
    const Measurement b = Median(base);
    const bool bytes = mode != "pingpong";
    const char* unit = bytes ? "MB/s" : "round trips/s";
    const double scale = bytes ? 1e-6 : 1.0;
    // CPU of the workload process: microseconds per MB, or per round trip.
    const char* cpu_unit = bytes ? "us/MB" : "us/rt";
    const double cpu_scale = bytes ? 1e12 : 1e6;
    std::printf("%s (%d x %.1f s, median)\n", mode.c_str(), repeats, seconds);
    std::printf("  %-22s %12.1f %s  cpu %8.1f %s\n", "untraced", b.rate * scale, unit,
                b.cpu_per_unit * cpu_scale, cpu_unit);
    auto row = [&](const char* name, const std::vector<Measurement>& runs) {
      if (runs.empty()) {
        std::printf("  %-22s skipped: needs root\n", name);
        return;
      }
      const Measurement m = Median(runs);
      std::printf(
          "  %-22s %12.1f %s  cpu %8.1f %s  loss %5.1f%%  cpu +%5.1f%%  events %llu  lost %llu\n",
          name, m.rate * scale, unit, m.cpu_per_unit * cpu_scale, cpu_unit,
          100.0 * (1.0 - m.rate / b.rate), 100.0 * (m.cpu_per_unit / b.cpu_per_unit - 1.0),
          static_cast<unsigned long long>(m.events), static_cast<unsigned long long>(m.lost));
    };
    row("ebpf", ebpf);
    row("ebpf --decode", ebpf_decode);
    row("preload", preload);
    row("preload + bytes", preload_bytes);
  }
  return 0;
}
