// artune apply compare: the same workload replayed over the embedded transport (on
// loopback, or to an `artune serve` peer) under a baseline config (the defaults, or a file) and the
// tuned config (the one in force, a file, or a sweep's winner over the baseline), with as many
// calls in flight as the sweep measured with, interleaved so that drift on a busy machine
// hits both alike, and printed side by side.
#include "apply_compare.h"

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <utility>

#include "artune/transport/knobs.h"
#include "artune/tuner/compare_plan.h"
#include "artune/tuner/compare_report.h"
#include "artune/tuner/paired_compare.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/workload.h"
#include "format.h"

namespace artune::cli {
namespace {

// The flags: what to compare (tuner::CompareRequest), and how to print it.
struct CompareFlags {
  tuner::CompareRequest request;
  bool json = false;
};

std::string Fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// Plans and measures both sides, interleaved; progress on stderr when the context
// shows it.
Result<std::pair<tuner::ComparePlan, tuner::PairedCompareResult>> PlanAndMeasure(
    const CompareFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(
      tuner::ComparePlan plan,
      tuner::PlanCompare(
          flags.request, [&context] { return OpenStoreForReading(context); }, std::cerr));
  const bool progress = ShowProgress(context);
  if (progress) {
    plan.options.progress = [repeats = flags.request.repeats](uint32_t repeat,
                                                              const std::string& side) {
      std::fprintf(stderr, "\r\033[Kcompare: repeat %u/%u, %s config", repeat + 1, repeats,
                   side.c_str());
      std::fflush(stderr);
    };
  }
  Result<tuner::PairedCompareResult> measured = tuner::MeasureCompare(plan);
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (!measured.ok()) return measured.status();
  return std::make_pair(std::move(plan), std::move(*measured));
}

// The header: the workload, the inflight, the load, the layout and both sides' sources.
void PrintCompareHeader(const CompareFlags& flags, const tuner::ComparePlan& plan) {
  const tuner::Workload& workload = plan.workload;
  std::cout << "workload  " << workload.description << ": " << workload.messages.size()
            << " messages, " << FormatHumanBytes(workload.total_bytes) << " per pass; "
            << flags.request.repeats << " repeats x " << flags.request.rounds << "+ passes over "
            << flags.request.duration_s << "+ s each, interleaved\n"
            << "inflight  " << plan.inflight.calls << " calls (" << plan.inflight.text << ")\n";
  if (!flags.request.peer.empty()) {
    std::cout << "peer      artune serve at " << flags.request.peer
              << ": one connection, each side's config pushed live to both ends in turn\n";
  }
  if (plan.background_load > 0) {
    std::cout << "load      " << plan.background_load << " CPU hog"
              << (plan.background_load == 1 ? "" : "s")
              << " beside the measurement (--background-load)\n";
  }
  for (const std::string& line : tuner::DescribeLayout(workload)) {
    std::cout << "layout    " << line << "\n";
  }
  std::cout << "default   " << plan.baseline.source << "\n"
            << "tuned     " << plan.tuned.source << "\n\n";
}

// The side-by-side table: the knobs that differ (and the two size thresholds
// always), then what each side measured.
void PrintCompareTable(const tuner::ComparePlan& plan, const tuner::PairedCompareResult& compared) {
  const tuner::CompareSideSummary& base = compared.baseline.summary;
  const tuner::CompareSideSummary& tune = compared.tuned.summary;
  std::vector<std::vector<std::string>> rows = {{"", "DEFAULT", "TUNED"}};
  for (const transport::Knob& knob : transport::Knobs()) {
    const uint64_t a = knob.get(plan.baseline.config), b = knob.get(plan.tuned.config);
    if (a == b && knob.name != "eager_threshold" && knob.name != "chunk_size") continue;
    rows.push_back({std::string(knob.name), transport::FormatKnobValue(knob, a),
                    transport::FormatKnobValue(knob, b)});
  }
  rows.push_back({"fabric in use", compared.baseline.fabric, compared.tuned.fabric});
  rows.push_back({"workload pass (ms)", Fixed(base.workload_ms, 2), Fixed(tune.workload_ms, 2)});
  rows.push_back({"call p50 (us)", Fixed(base.p50_us, 1), Fixed(tune.p50_us, 1)});
  rows.push_back({"call p99 (us)", Fixed(base.p99_us, 1), Fixed(tune.p99_us, 1)});
  rows.push_back({"bandwidth (MB/s)", Fixed(base.mbps, 1), Fixed(tune.mbps, 1)});
  rows.push_back({"cpu (cores)", Fixed(base.cpu_cores, 2), Fixed(tune.cpu_cores, 2)});
  rows.push_back({"calls", std::to_string(base.calls), std::to_string(tune.calls)});
  rows.push_back({"validated", base.validated ? "yes" : "NO", tune.validated ? "yes" : "NO"});
  PrintTable(rows, {false, true, true}, std::cout);
}

// The speedup line and the paired verdict under it.
void PrintCompareVerdict(const CompareFlags& flags, const tuner::PairedCompareResult& compared) {
  const tuner::PairedVerdict& verdict = compared.verdict;
  std::cout << "\ntuned vs default: workload pass " << Fixed(compared.speedup, 2) << "x "
            << (compared.speedup >= 1 ? "faster" : "slower") << " (median of "
            << flags.request.repeats << "; paired repeats " << Fixed(compared.paired_low, 2)
            << "x.." << Fixed(compared.paired_high, 2) << "x)\n";
  if (verdict.outcome == tuner::PairedOutcome::kTooFewPairs) {
    std::cout << "  " << flags.request.repeats << " repeat(s) only: too few to tell a config from "
              << "noise; use --repeats " << tuner::kMinPairsForVerdict << " or more\n";
  } else {
    std::cout << "  paired: median " << Fixed(verdict.estimate.median, 3) << "x, "
              << static_cast<int>(verdict.estimate.achieved_confidence * 100 + 0.5)
              << " % interval " << Fixed(verdict.estimate.low, 3) << "x.."
              << Fixed(verdict.estimate.high, 3) << "x over " << verdict.estimate.count
              << " pairs: " << tuner::PairedOutcomeText(verdict.outcome) << "\n";
  }
}

Status Compare(const CompareFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto planned, PlanAndMeasure(flags, context));
  const auto& [plan, compared] = planned;
  if (flags.json) {
    std::cout << tuner::CompareJson(flags.request, plan, compared).dump(2) << "\n";
  } else {
    PrintCompareHeader(flags, plan);
    PrintCompareTable(plan, compared);
    PrintCompareVerdict(flags, compared);
  }
  return tuner::CheckCompareValidated(compared);
}

}  // namespace

void AddApplyCompare(CLI::App& apply, Context& context) {
  auto flags = std::make_shared<CompareFlags>();
  auto* command = apply.add_subcommand("compare",
                                       "Replay a workload over the embedded transport (servers in "
                                       "this process, or an `artune serve` peer) under the "
                                       "default and the tuned config, side by side");
  command->add_option("--workload", flags->request.capture_id,
                      "Stored capture to replay (`artune captures`); default: --scheme");
  command
      ->add_option("--scheme", flags->request.scheme,
                   "TF-gRPC-Bench scheme over S,M,L buffers when no --workload is given")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  command
      ->add_option("--baseline", flags->request.baseline_path,
                   "Baseline config file (default: the transport's defaults)")
      ->type_name("FILE");
  command
      ->add_option("--tuned", flags->request.tuned_path,
                   "Tuned config file (default: the file `artune apply config` wrote: "
                   "$ARTUNE_CONFIG, else $XDG_CONFIG_HOME/artune/transport.toml)")
      ->type_name("FILE");
  command->add_option("--sweep", flags->request.sweep_id,
                      "Use a sweep's winner as the tuned config, laid over the baseline: the "
                      "config its verdict chose at its final re-measurement, else its best "
                      "trial (what `artune apply config --sweep` applies)");
  command->add_option("--fabric", flags->request.fabric, "Force the fabric of both sides")
      ->check(CLI::IsMember({"tcp", "verbs", "auto", "shm"}));
  command->add_option("--repeats", flags->request.repeats, "Measurements per side (median shown)")
      ->capture_default_str();
  command
      ->add_option("--rounds", flags->request.rounds,
                   "Passes over the replay list per measurement, at least (see --duration)")
      ->capture_default_str();
  command
      ->add_option("--duration", flags->request.duration_s,
                   "Seconds per measurement, at least: passes go on until then, and the "
                   "workload time is the mean of one pass (0: exactly --rounds passes)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--warmup-rounds", flags->request.warmup_rounds, "Unmeasured passes first")
      ->capture_default_str();
  command->add_option("--messages", flags->request.messages, "Replay list length for a capture")
      ->capture_default_str();
  command
      ->add_option("--inflight", flags->request.inflight,
                   "Calls in flight (1: one at a time). Default: with --sweep, the inflight "
                   "that sweep measured with, else 8 like `artune sweep --inflight`, so the "
                   "tuned config is compared in the regime it was tuned for")
      ->check(CLI::Range(1u, 1024u));
  command->add_option("--seed", flags->request.seed, "Replay seed")->capture_default_str();
  command
      ->add_option("--background-load", flags->request.background_load,
                   "Measure on a busy host: N CPU hogs (child processes spinning) run beside "
                   "both sides' measurements and stop with them; `all`: one per online core")
      ->type_name("N|all")
      ->capture_default_str();
  command
      ->add_option("--peer", flags->request.peer,
                   "host:port of `artune serve`: compare over the real link, both sides over "
                   "one connection with each side's config pushed live to both ends before its "
                   "turn (so they may differ only in live knobs; the peer keeps the last "
                   "side's). Default: both sides' servers in this process on loopback")
      ->type_name("HOST:PORT");
  command->add_flag("--json", flags->json, "Print one JSON object instead of the table");
  command->footer(
      "ARTUNE_* variables are ignored here: each side is exactly its file (or the defaults).\n"
      "Exit code 3 when a replayed reply fails validation.\n"
      "Example: artune apply compare --workload 4 --fabric tcp");
  command->callback([flags, &context] {
    RunCommand(context, [&]() -> Status { return Compare(*flags, context); });
  });
}

}  // namespace artune::cli
