// artune apply compare: the same workload replayed over the embedded transport (on
// loopback, or to an `artune serve` peer) under a baseline config (the defaults, or a file) and the
// tuned config (the one in force, a file, or a sweep's winner over the baseline), with as many
// calls in flight as the sweep measured with, interleaved so that drift on a busy machine
// hits both alike, and printed side by side.
#include "apply_compare.h"

#include <cstdio>
#include <iostream>
#include <utility>

#include "artune/report/compare_text.h"
#include "artune/tuner/compare_plan.h"
#include "artune/tuner/compare_report.h"
#include "artune/tuner/paired_compare.h"

namespace artune::cli {
namespace {

// The flags: what to compare (tuner::CompareRequest), and how to print it.
struct CompareFlags {
  tuner::CompareRequest request;
  bool json = false;
};

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

Status Compare(const CompareFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto planned, PlanAndMeasure(flags, context));
  const auto& [plan, compared] = planned;
  if (flags.json) {
    std::cout << tuner::CompareJson(flags.request, plan, compared).dump(2) << "\n";
  } else {
    report::PrintCompareText(flags.request, plan, compared, std::cout);
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
