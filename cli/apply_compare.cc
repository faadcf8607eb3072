// artune apply compare: the same workload replayed over the embedded transport on
// loopback under a baseline config (the defaults, or a file) and the tuned config
// (the one in force, a file, or a sweep's winner over the baseline), with as many
// calls in flight as the sweep measured with, interleaved so that drift on a busy machine
// hits both alike, and printed side by side.
#include "apply_compare.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "artune/db/store.h"
#include "artune/transport/config_loader.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/background_load.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/config_emit.h"
#include "artune/tuner/paired_compare.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/sweep_choice.h"
#include "artune/tuner/sweep_plan.h"
#include "artune/tuner/trial_json.h"
#include "artune/tuner/workload.h"
#include "format.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;
using transport::Config;

struct CompareFlags {
  std::optional<int64_t> capture_id;
  std::string scheme = "skew";
  std::string baseline_path;
  std::string tuned_path;
  std::optional<int64_t> sweep_id;
  std::string fabric;
  uint32_t repeats = 3;
  uint32_t rounds = 2;      // passes per measurement, at least
  double duration_s = 0.5;  // and until this long (as `artune sweep --duration`)
  uint32_t warmup_rounds = 1;
  uint32_t messages = 32;
  std::optional<uint32_t> inflight;  // nullopt: as the sweep measured (ReplayInflight)
  uint64_t seed = 1;
  std::string background_load = "0";  // N CPU hogs or "all" (background_load.h)
  bool json = false;
};

// A config file on its own: no ARTUNE_* variables, so both sides differ only by
// what their files say.
Result<Config> LoadFileOnly(const std::string& path) {
  transport::ConfigLoadOptions options;
  options.config_path = path;
  options.use_default_path = false;
  options.environment = transport::Environment{};
  ARTUNE_ASSIGN_OR_RETURN(transport::LoadedConfig loaded, transport::LoadConfig(options));
  return loaded.config;
}

// The tuned side's config. With --sweep: the sweep's winner (artune/tuner/sweep_choice.h, the
// same knobs `artune apply config --sweep` writes) laid over the baseline, so the
// two sides differ only by the swept knobs; `choice` is set. Else a file on its own.
Result<Config> TunedConfig(const CompareFlags& flags, Context& context, const Config& baseline,
                           std::string& source, std::optional<tuner::SweepChoice>& choice) {
  if (flags.sweep_id.has_value()) {
    ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
    ARTUNE_ASSIGN_OR_RETURN(choice, tuner::ReadSweepChoice(*store, *flags.sweep_id));
    std::vector<tuner::KnobSetting> settings;
    for (const auto& [name, value] : choice->knobs) {
      settings.push_back({name, value, "sweep " + std::to_string(*flags.sweep_id)});
    }
    source = "sweep " + std::to_string(*flags.sweep_id) + " winner " + choice->KnobText() + ", " +
             choice->How() + (flags.baseline_path.empty() ? "" : ", over the baseline");
    return tuner::ApplyKnobSettings(baseline, settings);
  }
  std::string path = flags.tuned_path;
  if (path.empty()) {
    path = transport::DefaultConfigPath();
    std::error_code error;
    if (path.empty() || !std::filesystem::exists(path, error)) {
      return Status::NotFound("no tuned config at " + (path.empty() ? "(no path)" : path) +
                              "; run `artune apply config` first, or give --tuned FILE or "
                              "--sweep ID");
    }
  }
  source = "file " + path;
  return LoadFileOnly(path);
}

// `artune sweep --inflight`'s default: what a sweep measures with unless told.
constexpr uint32_t kSweepDefaultInflight = tuner::kDefaultSweepInflight;

// How many calls the replay keeps in flight, and why that many.
struct Inflight {
  uint32_t calls = kSweepDefaultInflight;
  std::string source;  // "flag" | "sweep" | "default"
  std::string text;    // for the header line, e.g. "as sweep 4 measured"
};

// --inflight when given; else what the --sweep measured with (its stored
// parameters["inflight"]), so the tuned config is compared in the regime the sweep
// optimised it for; else the sweep's own default. A sweep with no usable stored
// value falls back to that default with a note on stderr.
Inflight ReplayInflight(const CompareFlags& flags, const std::optional<db::SweepRecord>& sweep) {
  if (flags.inflight.has_value()) return {*flags.inflight, "flag", "--inflight"};
  const Inflight fallback{kSweepDefaultInflight, "default",
                          "the default of `artune sweep --inflight`"};
  if (!sweep.has_value()) return fallback;
  const std::string sweep_name = "sweep " + std::to_string(sweep->id);
  const auto stored = sweep->parameters.find("inflight");
  const std::string text = stored == sweep->parameters.end() ? "" : stored->second;
  uint32_t calls = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), calls);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || calls < 1 ||
      calls > 1024) {
    std::cerr << "artune: note: " << sweep_name
              << (text.empty() ? " stored no inflight" : " stored inflight '" + text + "'")
              << "; replaying with " << kSweepDefaultInflight
              << " calls in flight (the sweep's default; --inflight N to choose)\n";
    return fallback;
  }
  return {calls, "sweep", "as " + sweep_name + " measured"};
}

Result<tuner::Workload> BuildWorkload(const CompareFlags& flags, Context& context) {
  if (flags.capture_id.has_value()) {
    ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
    tuner::ReplayOptions options;
    options.messages = flags.messages;
    options.seed = flags.seed;
    return tuner::LoadCaptureWorkload(*store, *flags.capture_id, options);
  }
  tuner::PayloadSpec spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, tuner::ParseScheme(flags.scheme));
  spec.classes = {tuner::BufferClass::kSmall, tuner::BufferClass::kMedium,
                  tuner::BufferClass::kLarge};
  spec.seed = flags.seed;
  return tuner::SchemeWorkload(spec);
}

const char* PairedOutcomeText(tuner::PairedOutcome outcome) {
  switch (outcome) {
    case tuner::PairedOutcome::kFaster:
      return "the tuned config is faster beyond noise";
    case tuner::PairedOutcome::kSlower:
      return "the tuned config is slower beyond noise";
    case tuner::PairedOutcome::kWithinNoise:
      return "the interval holds 1x: the difference is within noise";
    case tuner::PairedOutcome::kTooFewPairs:
      break;
  }
  return "too few pairs to tell";
}

std::string Fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

tuner::PairedCompareOptions CompareOptionsOf(const CompareFlags& flags) {
  tuner::PairedCompareOptions options;
  options.repeats = flags.repeats;
  options.replay.rounds = flags.rounds;
  options.replay.min_duration_s = flags.duration_s;
  options.replay.warmup_rounds = flags.warmup_rounds;
  return options;
}

// What one compare measures: the two sides, the workload replayed over both and how.
struct ComparePlan {
  tuner::PairedCompareOptions options;
  uint32_t background_load = 0;  // CPU hogs beside the measurement
  tuner::CompareSideSpec baseline{"default", "", Config{}};
  tuner::CompareSideSpec tuned{"tuned", "", Config{}};
  std::optional<tuner::SweepChoice> choice;  // set with --sweep
  Inflight inflight;
  tuner::Workload workload;
};

// Resolves the flags into both sides' configs, the inflight and the workload.
Result<ComparePlan> PlanCompare(const CompareFlags& flags, Context& context) {
  ComparePlan plan;
  plan.options = CompareOptionsOf(flags);
  ARTUNE_RETURN_IF_ERROR(tuner::ValidatePairedCompareOptions(plan.options));
  ARTUNE_ASSIGN_OR_RETURN(plan.background_load, tuner::ParseBackgroundLoad(flags.background_load));
  if (flags.baseline_path.empty()) {
    plan.baseline.source = "transport defaults";
  } else {
    ARTUNE_ASSIGN_OR_RETURN(plan.baseline.config, LoadFileOnly(flags.baseline_path));
    plan.baseline.source = "file " + flags.baseline_path;
  }
  ARTUNE_ASSIGN_OR_RETURN(plan.tuned.config, TunedConfig(flags, context, plan.baseline.config,
                                                         plan.tuned.source, plan.choice));
  plan.inflight = ReplayInflight(
      flags, plan.choice ? std::optional<db::SweepRecord>(plan.choice->sweep) : std::nullopt);
  if (!flags.fabric.empty()) {
    for (tuner::CompareSideSpec* side : {&plan.baseline, &plan.tuned}) {
      ARTUNE_RETURN_IF_ERROR(transport::SetKnob(side->config, "fabric", flags.fabric));
    }
  }
  ARTUNE_ASSIGN_OR_RETURN(plan.workload, BuildWorkload(flags, context));
  plan.options.replay.inflight = plan.inflight.calls;
  return plan;
}

// Measures both sides, interleaved, with the plan's hogs beside them; progress on
// stderr when the context shows it.
Result<tuner::PairedCompareResult> MeasureCompare(const CompareFlags& flags, Context& context,
                                                  ComparePlan& plan) {
  const bool progress = ShowProgress(context);
  if (progress) {
    plan.options.progress = [&flags](uint32_t repeat, const std::string& side) {
      std::fprintf(stderr, "\r\033[Kcompare: repeat %u/%u, %s config", repeat + 1, flags.repeats,
                   side.c_str());
      std::fflush(stderr);
    };
  }
  // The hogs run while both sides are measured and are gone before anything is
  // printed (the destructor stops them on an error too).
  ARTUNE_ASSIGN_OR_RETURN(tuner::BackgroundLoad load,
                          tuner::BackgroundLoad::Start(plan.background_load));
  Result<tuner::PairedCompareResult> measured =
      tuner::RunPairedCompare(plan.baseline, plan.tuned, plan.workload, plan.options);
  load.Stop();
  if (progress) std::fprintf(stderr, "\r\033[K");
  return measured;
}

ordered_json CompareSideJson(const tuner::CompareSide& side) {
  const tuner::CompareSideSummary& s = side.summary;
  ordered_json runs = ordered_json::array(), passes = ordered_json::array();
  for (const auto& run : side.runs) {
    runs.push_back(tuner::PassMilliseconds(run));
    passes.push_back(run.passes);
  }
  return ordered_json{{"source", side.spec.source},
                      {"fabric", side.fabric},
                      {"config", transport::ConfigToMap(side.spec.config)},
                      {"workload_ms", s.workload_ms},
                      {"workload_ms_per_repeat", runs},
                      {"passes_per_repeat", passes},
                      {"latency_p50_us", s.p50_us},
                      {"latency_p99_us", s.p99_us},
                      {"bandwidth_mbps", s.mbps},
                      {"cpu_cores", s.cpu_cores},
                      {"calls", s.calls},
                      {"validated", s.validated}};
}

void PrintCompareJson(const CompareFlags& flags, const ComparePlan& plan,
                      const tuner::PairedCompareResult& compared) {
  const tuner::Workload& workload = plan.workload;
  const std::optional<tuner::SweepChoice>& choice = plan.choice;
  ordered_json out;
  out["workload"] = workload.description;
  out["layout"] = tuner::LayoutJson(workload);
  out["messages"] = workload.messages.size();
  out["workload_bytes"] = workload.total_bytes;
  out["repeats"] = flags.repeats;
  out["rounds"] = flags.rounds;
  out["duration_s"] = flags.duration_s;
  out["inflight"] = plan.inflight.calls;
  out["inflight_source"] = plan.inflight.source;
  out["background_load"] = plan.background_load;
  out["default"] = CompareSideJson(compared.baseline);
  out["tuned"] = CompareSideJson(compared.tuned);
  // With --sweep: which of its configs this is ("final_remeasurement": the one its
  // verdict chose; "best_trial": no verdict named one) and its stored trial.
  out["tuned"]["sweep_winner"] =
      choice ? ordered_json{{"sweep_id", choice->sweep.id},
                            {"knobs", tuner::KnobsJson(choice->knobs)},
                            {"chosen_by",
                             choice->chosen_by_verdict ? "final_remeasurement" : "best_trial"},
                            {"trial_id",
                             choice->trial ? ordered_json(choice->trial->id) : ordered_json()}}
             : ordered_json();
  out["speedup"] = compared.speedup;
  out["paired_speedups"] = compared.paired_speedups;
  out["paired_speedup"] = tuner::PairedEstimateJson(compared.verdict.estimate);
  // faster | slower: the interval of the paired median clears 1; within_noise;
  // too_few_pairs: fewer than tuner::kMinPairsForVerdict repeats.
  out["verdict"] = tuner::PairedOutcomeName(compared.verdict.outcome);
  out["consistent"] =
      !compared.paired_speedups.empty() && (compared.paired_low > 1 || compared.paired_high < 1);
  std::cout << out.dump(2) << "\n";
}

// The header: the workload, the inflight, the load, the layout and both sides' sources.
void PrintCompareHeader(const CompareFlags& flags, const ComparePlan& plan) {
  const tuner::Workload& workload = plan.workload;
  std::cout << "workload  " << workload.description << ": " << workload.messages.size()
            << " messages, " << FormatHumanBytes(workload.total_bytes) << " per pass; "
            << flags.repeats << " repeats x " << flags.rounds << "+ passes over "
            << flags.duration_s << "+ s each, interleaved\n"
            << "inflight  " << plan.inflight.calls << " calls (" << plan.inflight.text << ")\n";
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
void PrintCompareTable(const ComparePlan& plan, const tuner::PairedCompareResult& compared) {
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
            << (compared.speedup >= 1 ? "faster" : "slower") << " (median of " << flags.repeats
            << "; paired repeats " << Fixed(compared.paired_low, 2) << "x.."
            << Fixed(compared.paired_high, 2) << "x)\n";
  if (verdict.outcome == tuner::PairedOutcome::kTooFewPairs) {
    std::cout << "  " << flags.repeats << " repeat(s) only: too few to tell a config from "
              << "noise; use --repeats " << tuner::kMinPairsForVerdict << " or more\n";
  } else {
    std::cout << "  paired: median " << Fixed(verdict.estimate.median, 3) << "x, "
              << static_cast<int>(verdict.estimate.achieved_confidence * 100 + 0.5)
              << " % interval " << Fixed(verdict.estimate.low, 3) << "x.."
              << Fixed(verdict.estimate.high, 3) << "x over " << verdict.estimate.count
              << " pairs: " << PairedOutcomeText(verdict.outcome) << "\n";
  }
}

Status Compare(const CompareFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(ComparePlan plan, PlanCompare(flags, context));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::PairedCompareResult compared,
                          MeasureCompare(flags, context, plan));
  if (flags.json) {
    PrintCompareJson(flags, plan, compared);
  } else {
    PrintCompareHeader(flags, plan);
    PrintCompareTable(plan, compared);
    PrintCompareVerdict(flags, compared);
  }
  const tuner::CompareSideSummary& base = compared.baseline.summary;
  const tuner::CompareSideSummary& tune = compared.tuned.summary;
  if (!base.validated || !tune.validated) {
    return Status::Corruption("a replayed call failed validation: " +
                              (base.validated ? tune.validation_error : base.validation_error));
  }
  return Status::Ok();
}

}  // namespace

void AddApplyCompare(CLI::App& apply, Context& context) {
  auto flags = std::make_shared<CompareFlags>();
  auto* command = apply.add_subcommand("compare",
                                       "Replay a workload over the embedded transport (servers in "
                                       "this process) under the default and the "
                                       "tuned config, side by side");
  command->add_option("--workload", flags->capture_id,
                      "Stored capture to replay (`artune captures`); default: --scheme");
  command
      ->add_option("--scheme", flags->scheme,
                   "TF-gRPC-Bench scheme over S,M,L buffers when no --workload is given")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  command
      ->add_option("--baseline", flags->baseline_path,
                   "Baseline config file (default: the transport's defaults)")
      ->type_name("FILE");
  command
      ->add_option("--tuned", flags->tuned_path,
                   "Tuned config file (default: the file `artune apply config` wrote: "
                   "$ARTUNE_CONFIG, else $XDG_CONFIG_HOME/artune/transport.toml)")
      ->type_name("FILE");
  command->add_option("--sweep", flags->sweep_id,
                      "Use a sweep's winner as the tuned config, laid over the baseline: the "
                      "config its verdict chose at its final re-measurement, else its best "
                      "trial (what `artune apply config --sweep` applies)");
  command->add_option("--fabric", flags->fabric, "Force the fabric of both sides")
      ->check(CLI::IsMember({"tcp", "verbs", "auto", "shm"}));
  command->add_option("--repeats", flags->repeats, "Measurements per side (median shown)")
      ->capture_default_str();
  command
      ->add_option("--rounds", flags->rounds,
                   "Passes over the replay list per measurement, at least (see --duration)")
      ->capture_default_str();
  command
      ->add_option("--duration", flags->duration_s,
                   "Seconds per measurement, at least: passes go on until then, and the "
                   "workload time is the mean of one pass (0: exactly --rounds passes)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--warmup-rounds", flags->warmup_rounds, "Unmeasured passes first")
      ->capture_default_str();
  command->add_option("--messages", flags->messages, "Replay list length for a capture")
      ->capture_default_str();
  command
      ->add_option("--inflight", flags->inflight,
                   "Calls in flight (1: one at a time). Default: with --sweep, the inflight "
                   "that sweep measured with, else 8 like `artune sweep --inflight`, so the "
                   "tuned config is compared in the regime it was tuned for")
      ->check(CLI::Range(1u, 1024u));
  command->add_option("--seed", flags->seed, "Replay seed")->capture_default_str();
  command
      ->add_option("--background-load", flags->background_load,
                   "Measure on a busy host: N CPU hogs (child processes spinning) run beside "
                   "both sides' measurements and stop with them; `all`: one per online core")
      ->type_name("N|all")
      ->capture_default_str();
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
