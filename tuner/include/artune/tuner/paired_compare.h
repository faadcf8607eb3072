// The paired A/B comparison behind `artune apply compare`: one workload replayed
// over the embedded transport, on loopback (both ends in this process) or over the
// real link to an `artune serve` peer, under a baseline config and a tuned config,
// repeat by repeat, the two sides interleaved
// (A B, B A, A B, ...) so that drift on a busy machine hits both alike, and judged
// by the paired speedups of the repeats. A front end picks the configs and the
// workload and prints the result; this measures.
//
// Threading: RunPairedCompare blocks the calling thread; progress runs on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

// One side to compare: a name for messages ("default" | "tuned"), where its config
// came from (for messages and output), and the config.
struct CompareSideSpec {
  std::string name;
  std::string source;
  transport::Config config;
};

struct PairedCompareOptions {
  uint32_t repeats = 3;  // measurements per side; each repeat pairs one of each
  ReplayRunOptions replay;
  // "": each side's server runs in this process on loopback. Else host:port of
  // `artune serve`: both sides share one connection to it, and each side's config
  // is pushed live to both ends before its turn (as `sweep --peer` does per trial),
  // so the two may differ only in live knobs (CheckComparableOverOneConnection). The
  // peer keeps the live knobs of the side measured last.
  std::string peer;
  // Called before each measurement with the repeat (0-based) and the side's name.
  std::function<void(uint32_t repeat, const std::string& side)> progress;
};

// The medians over a side's repeats.
struct CompareSideSummary {
  double workload_ms = 0;  // one pass over the replay list
  double p50_us = 0, p99_us = 0, mbps = 0;
  double cpu_cores = 0;  // median over the measurements
  uint64_t calls = 0;
  bool validated = true;
  std::string validation_error;  // the first run's that failed validation
};

struct CompareSide {
  CompareSideSpec spec;
  std::string fabric;           // the fabric its transport used
  std::vector<RunResult> runs;  // one per repeat
  // CPU cores this process kept busy during each of the side's measurements (both
  // ends on loopback, the client's alone with a peer): what its progress mode costs
  // besides time.
  std::vector<double> cpu_cores;
  CompareSideSummary summary;
};

struct PairedCompareResult {
  CompareSide baseline, tuned;
  // Median baseline pass time over median tuned pass time (> 1: tuned is faster).
  double speedup = 0;
  // Per repeat, the baseline's pass time over the tuned one's, taken back to back;
  // their spread says how far the median speedup can be trusted.
  std::vector<double> paired_speedups;
  double paired_low = 0, paired_high = 0;  // their range; 0 when there are none
  PairedVerdict verdict;                   // JudgePairedSpeedups(paired_speedups)
};

// kInvalidArgument for zero repeats or rounds or a negative (or NaN) duration; the
// message names the flags of `artune apply compare`.
Status ValidatePairedCompareOptions(const PairedCompareOptions& options);

// With a peer both sides run over one connection, so what a running transport cannot
// change must be the same in both: kInvalidArgument naming the first knob fixed at
// start (Knob::live false: the fabric, the verbs device and QP attributes) whose
// values differ, and what to do.
Status CheckComparableOverOneConnection(const transport::Config& baseline,
                                        const transport::Config& tuned);

// Milliseconds of one pass over the replay list, averaged over the run's passes.
double PassMilliseconds(const RunResult& run);

// Starts both sides' servers and channels (with a peer: one channel to it, shared),
// measures `options.repeats` pairs and shuts the servers down. On loopback a side
// that busy-polls is parked on event polling while the other is measured (its
// threads would otherwise spin and take the measured side's CPU). Errors: those of
// ValidatePairedCompareOptions and, with a peer, CheckComparableOverOneConnection and
// the connection's (with the address); a side that cannot start (the message
// names it and its source); a replay's transport error. A validation mismatch is not an error: it
// is in the sides' summaries.
Result<PairedCompareResult> RunPairedCompare(const CompareSideSpec& baseline,
                                             const CompareSideSpec& tuned, const Workload& workload,
                                             const PairedCompareOptions& options);

}  // namespace artune::tuner
