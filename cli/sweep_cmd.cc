// artune sweep: search the transport's knobs (eager threshold x chunk size by
// default) for the fastest config on this link and workload; every trial measured,
// validated and stored on its own; --resume continues a killed sweep. Thin over the
// tuner library (artune/tuner/sweep.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "artune/db/store.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/sweep.h"
#include "command.h"
#include "knob_flags.h"
#include "progress.h"
#include "trial_json.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

struct SweepFlags {
  KnobFlags knobs;
  std::vector<std::string> axes;  // --knob
  std::string scheme = "uniform";
  std::string classes;  // empty: the scheme's default
  uint32_t buffers = 10;
  int64_t capture_id = 0;  // --workload
  uint32_t replay_messages = 32;
  std::string objective = "latency-p50";
  std::string peer;
  std::string fabric;  // empty: the config's (auto: verbs where a device exists)
  std::string strategy = "grid";
  uint32_t repeats = 3;
  double warmup_s = 0.2;
  double duration_s = 0.5;
  uint32_t inflight = 0;  // 0: the capture's concurrency (p50), else kDefaultInflight
  uint32_t finalists = 3;
  uint32_t final_rounds = 3;
  uint64_t seed = 1;
  int64_t resume = 0;
  bool json = false;
  // A resumed sweep stored before workload-time meant seconds per pass (no
  // "workload_time" parameter): it keeps measuring the old way.
  bool replay_fixed_rounds = false;
};

// Calls in flight when neither --inflight nor the capture says (`apply compare`
// uses the same default).
constexpr uint32_t kDefaultInflight = 8;
// The replay's concurrency is capped here: a list rarely holds more messages.
constexpr uint32_t kMaxCapturedInflight = 64;

// The stored "workload_time" parameter of sweeps whose workload-time is the seconds
// of one pass, averaged over the passes of a --duration measurement.
constexpr const char* kWorkloadTimePerPass = "seconds_per_pass";

// What --resume needs to rebuild the same sweep, stored with it.
std::map<std::string, std::string> ParametersOf(const SweepFlags& flags) {
  return {{"scheme", flags.scheme},
          {"classes", flags.classes},
          {"buffers", std::to_string(flags.buffers)},
          {"replay_messages", std::to_string(flags.replay_messages)},
          {"repeats", std::to_string(flags.repeats)},
          {"warmup_s", std::to_string(flags.warmup_s)},
          {"duration_s", std::to_string(flags.duration_s)},
          {"inflight", std::to_string(flags.inflight)},
          {"finalists", std::to_string(flags.finalists)},
          {"final_rounds", std::to_string(flags.final_rounds)},
          {"seed", std::to_string(flags.seed)},
          {"workload_time", kWorkloadTimePerPass}};
}

Status RestoreFlags(const db::SweepRecord& sweep, SweepFlags& flags) {
  const auto& p = sweep.parameters;
  auto get = [&](const char* name) -> Result<std::string> {
    auto it = p.find(name);
    if (it == p.end()) {
      return Status::Corruption("sweep " + std::to_string(sweep.id) + " has no stored " + name +
                                ": it cannot be resumed; start a new sweep");
    }
    return it->second;
  };
  try {
    ARTUNE_ASSIGN_OR_RETURN(flags.scheme, get("scheme"));
    ARTUNE_ASSIGN_OR_RETURN(flags.classes, get("classes"));
    ARTUNE_ASSIGN_OR_RETURN(std::string buffers, get("buffers"));
    flags.buffers = static_cast<uint32_t>(std::stoul(buffers));
    ARTUNE_ASSIGN_OR_RETURN(std::string messages, get("replay_messages"));
    flags.replay_messages = static_cast<uint32_t>(std::stoul(messages));
    ARTUNE_ASSIGN_OR_RETURN(std::string repeats, get("repeats"));
    flags.repeats = static_cast<uint32_t>(std::stoul(repeats));
    ARTUNE_ASSIGN_OR_RETURN(std::string warmup, get("warmup_s"));
    flags.warmup_s = std::stod(warmup);
    ARTUNE_ASSIGN_OR_RETURN(std::string duration, get("duration_s"));
    flags.duration_s = std::stod(duration);
    ARTUNE_ASSIGN_OR_RETURN(std::string inflight, get("inflight"));
    flags.inflight = static_cast<uint32_t>(std::stoul(inflight));
    ARTUNE_ASSIGN_OR_RETURN(std::string seed, get("seed"));
    flags.seed = std::stoull(seed);
    // Sweeps stored before the final round had none of these: the defaults.
    if (p.count("finalists"))
      flags.finalists = static_cast<uint32_t>(std::stoul(p.at("finalists")));
    if (p.count("final_rounds")) {
      flags.final_rounds = static_cast<uint32_t>(std::stoul(p.at("final_rounds")));
    }
    // Before it, a workload measurement was two passes and workload-time their total.
    flags.replay_fixed_rounds = !p.count("workload_time");
    if (!flags.replay_fixed_rounds && p.at("workload_time") != kWorkloadTimePerPass) {
      return Status::Corruption("sweep " + std::to_string(sweep.id) + " has workload_time '" +
                                p.at("workload_time") +
                                "', which this artune does not know: resume it with the "
                                "artune that started it, or start a new sweep");
    }
  } catch (const std::exception& error) {
    return Status::Corruption("sweep " + std::to_string(sweep.id) +
                              " has a stored parameter that is not a number (" + error.what() +
                              "): start a new sweep");
  }
  flags.objective = sweep.objective;
  flags.strategy = sweep.strategy;
  flags.peer = sweep.peer == "loopback" ? "" : sweep.peer;
  flags.axes.clear();
  std::istringstream specs(sweep.search_space);
  for (std::string spec; specs >> spec;) flags.axes.push_back(spec);
  if (sweep.workload.rfind("capture:", 0) == 0) {
    flags.capture_id = std::stoll(sweep.workload.substr(8));
  }
  return Status::Ok();
}

Result<tuner::Workload> WorkloadFromFlags(const SweepFlags& flags, db::Store& store) {
  if (flags.capture_id != 0) {
    tuner::ReplayOptions replay;
    replay.messages = flags.replay_messages;
    replay.seed = flags.seed;
    return tuner::LoadCaptureWorkload(store, flags.capture_id, replay);
  }
  tuner::PayloadSpec spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, tuner::ParseScheme(flags.scheme));
  std::string classes = flags.classes;
  if (classes.empty()) classes = spec.scheme == tuner::Scheme::kUniform ? "S,M" : "S,M,L";
  ARTUNE_ASSIGN_OR_RETURN(spec.classes, tuner::ParseClasses(classes));
  spec.buffer_count = flags.buffers;
  spec.seed = flags.seed;
  return tuner::SchemeWorkload(spec);
}

std::string Number(double value) {
  std::ostringstream out;
  out << std::setprecision(value >= 100 ? 5 : 4) << value;
  return out.str();
}

void PrintHuman(const tuner::SweepOutcome& outcome, const tuner::Workload& workload,
                std::string_view unit) {
  const db::SweepRecord& sweep = outcome.sweep;
  std::cout << "Sweep " << sweep.id << ": " << sweep.objective << " (" << sweep.goal << "), "
            << sweep.strategy << ", " << sweep.workload << ", " << sweep.fabric << " to "
            << sweep.peer << "\n";
  std::cout << outcome.trials.size() << " trials (" << outcome.measured << " measured now, "
            << outcome.resumed << " from the store)\n";
  auto line = [&](const char* label, const std::optional<db::TrialRecord>& trial) {
    std::cout << std::left << std::setw(15) << label;
    if (!trial) {
      std::cout << "none\n";
      return;
    }
    std::cout << db::TrialKnobKey(trial->knobs) << "  " << Number(trial->objective) << " " << unit
              << " [" << Number(trial->ci_low) << ", " << Number(trial->ci_high) << "]\n";
  };
  line("best", outcome.best);
  if (outcome.search_best && outcome.best &&
      db::TrialKnobKey(outcome.search_best->knobs) != db::TrialKnobKey(outcome.best->knobs)) {
    line("search best", outcome.search_best);
  }
  line("default", outcome.default_trial);
  if (outcome.sweep.verdict && !outcome.sweep.verdict->finalists.empty()) {
    std::cout << std::left << std::setw(15) << "final round" << outcome.sweep.verdict->final_rounds
              << " interleaved rounds of the default and "
              << outcome.sweep.verdict->finalists.size() << " finalists (pooled):\n";
    const uint32_t rounds = outcome.sweep.verdict->final_rounds;
    for (const db::FinalistRecord& finalist : outcome.sweep.verdict->finalists) {
      const db::TrialRecord& pooled = finalist.pooled;
      std::cout << "  " << std::left << std::setw(13) << "" << db::TrialKnobKey(pooled.knobs)
                << "  ";
      if (pooled.status == "ok") {
        std::cout << Number(pooled.objective) << " " << unit << " [" << Number(pooled.ci_low)
                  << ", " << Number(pooled.ci_high) << "], faster than the default in "
                  << finalist.rounds_won << " of " << rounds << " rounds\n";
      } else {
        std::cout << pooled.status << ": " << pooled.error << "\n";
      }
    }
  }
  if (outcome.winner_pairs) {
    const tuner::MedianEstimate& pairs = outcome.winner_pairs->estimate;
    std::cout << std::left << std::setw(15) << "paired"
              << "the top finalist over the default, same-round samples: median "
              << Number(pairs.median) << "x, "
              << static_cast<int>(pairs.achieved_confidence * 100 + 0.5) << " % interval "
              << Number(pairs.low) << "x.." << Number(pairs.high) << "x over " << pairs.count
              << " pairs (" << tuner::PairedOutcomeName(outcome.winner_pairs->outcome) << ")\n";
  }
  if (outcome.default_remeasured) line("default again", outcome.default_remeasured);
  // The gain from the final round when there is one (interleaved, free of the
  // winner's curse and of drift), else from the search's own trials.
  const bool paired = outcome.best_remeasured && outcome.best_remeasured->status == "ok" &&
                      outcome.default_remeasured && outcome.default_remeasured->status == "ok";
  const std::optional<db::TrialRecord>& baseline =
      outcome.default_remeasured && outcome.default_remeasured->status == "ok"
          ? outcome.default_remeasured
          : outcome.default_trial;
  const std::optional<db::TrialRecord>& winner = paired ? outcome.best_remeasured : outcome.best;
  if (outcome.sweep.verdict) {
    std::cout << std::left << std::setw(15) << "verdict"
              << VerdictText(outcome.sweep.verdict->verdict) << "\n";
  }
  if (outcome.best_beats_default && baseline && baseline->status == "ok" && winner->objective > 0 &&
      baseline->objective > 0) {
    const bool lower = sweep.goal == "min";
    const double gain =
        lower ? baseline->objective / winner->objective : winner->objective / baseline->objective;
    std::cout << "best vs default: " << std::fixed << std::setprecision(2) << gain << "x"
              << (paired ? " (pooled over the final round)" : "") << "\n";
  }
  for (const std::string& line : tuner::DescribeLayout(workload)) {
    std::cout << std::left << std::setw(15) << "layout" << line << "\n";
  }
  std::cout << "`artune results --sweep " << sweep.id << "` shows every trial and the heatmap\n";
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

Status RunSweepCommand(SweepFlags flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store,
                          db::Store::Open(db::ResolveDatabasePath(context.globals.db_path)));
  db::SweepRecord record;
  transport::Config base;
  if (flags.resume != 0) {
    ARTUNE_ASSIGN_OR_RETURN(record, store->GetSweep(flags.resume));
    ARTUNE_RETURN_IF_ERROR(RestoreFlags(record, flags));
    for (const auto& [name, value] : record.base_config) {
      if (transport::FindKnob(name) == nullptr) continue;  // a knob this build dropped
      ARTUNE_RETURN_IF_ERROR(
          transport::SetKnob(base, name, value)
              .WithContext("stored base config of sweep " + std::to_string(record.id)));
    }
  } else {
    ARTUNE_ASSIGN_OR_RETURN(auto loaded, LoadConfigFromFlags(flags.knobs));
    base = loaded.config;
    if (!flags.fabric.empty())
      ARTUNE_RETURN_IF_ERROR(transport::SetKnob(base, "fabric", flags.fabric));
  }
  ARTUNE_ASSIGN_OR_RETURN(tuner::SearchSpace space, tuner::ParseSearchSpace(flags.axes));
  ARTUNE_ASSIGN_OR_RETURN(tuner::Objective objective, tuner::ParseObjective(flags.objective));
  ARTUNE_RETURN_IF_ERROR(tuner::MakeStrategy(flags.strategy, {1}, {0}).status());
  ARTUNE_ASSIGN_OR_RETURN(tuner::Workload workload, WorkloadFromFlags(flags, *store));

  if (flags.inflight == 0) {
    // As many calls in flight as the captured application kept (the replay list is
    // a burst like TensorFlow's per-step fetch), else the default.
    flags.inflight = workload.captured_inflight > 0
                         ? std::min(workload.captured_inflight, kMaxCapturedInflight)
                         : kDefaultInflight;
    if (workload.captured_inflight > 0 && !flags.json) {
      std::cerr << "inflight " << flags.inflight << ": the p50 of "
                << workload.captured_inflight_method << " calls in flight in the capture"
                << (workload.captured_inflight > kMaxCapturedInflight
                        ? " (" + std::to_string(workload.captured_inflight) + ", capped)"
                        : std::string())
                << " (--inflight sets it)\n";
    }
  }
  tuner::TrialOptions options;
  options.objective = objective;
  options.repeats = flags.repeats;
  options.warmup_s = flags.warmup_s;
  options.duration_s = flags.duration_s;
  options.inflight = flags.inflight;
  options.replay_fixed_rounds = flags.replay_fixed_rounds;
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<tuner::TrialTarget> target,
                          tuner::TrialTarget::Open(base, flags.peer, options));

  if (flags.resume == 0) {
    record.host = Hostname();
    record.peer = target->peer();
    record.fabric = target->fabric();
    record.objective = std::string(tuner::ObjectiveName(objective));
    record.strategy = flags.strategy;
    record.workload = workload.description;
    record.parameters = ParametersOf(flags);
  }

  tuner::SweepOptions sweep_options;
  sweep_options.final_round.finalists = flags.finalists;
  sweep_options.final_round.rounds = flags.final_rounds;
  ARTUNE_RETURN_IF_ERROR(tuner::ValidateFinalRoundOptions(sweep_options.final_round));

  ProgressLine progress(context);
  const std::string unit(tuner::ObjectiveUnit(objective));
  auto on_trial = [&](const tuner::SweepProgress& p) {
    if (!progress.drawing()) return;
    std::string text = (p.final_round ? "final round: " : "") + std::string("trial ") +
                       std::to_string(p.trial) + " of ~" + std::to_string(p.estimated) +
                       (p.resumed ? " (stored)" : "") + ", ETA " + FormatDuration(p.eta_s);
    if (p.final_round) text += ", measuring " + p.last_knobs;
    if (p.best_objective) {
      text += ", best " + Number(*p.best_objective) + " " + unit + " at " + p.best_knobs;
    }
    progress.Update(text);
  };
  ARTUNE_ASSIGN_OR_RETURN(
      tuner::SweepOutcome outcome,
      tuner::RunSweep(*store, *target, workload, space, base, record, on_trial, sweep_options));
  progress.Clear();

  if (flags.json) {
    ordered_json j;
    j["sweep_id"] = outcome.sweep.id;
    j["objective"] = outcome.sweep.objective;
    j["goal"] = outcome.sweep.goal;
    j["unit"] = unit;
    j["fabric"] = outcome.sweep.fabric;
    j["strategy"] = outcome.sweep.strategy;
    j["workload"] = outcome.sweep.workload;
    j["layout"] = LayoutJson(workload);
    j["peer"] = outcome.sweep.peer;
    j["search_space"] = outcome.sweep.search_space;
    j["inflight"] = flags.inflight;
    j["measured"] = outcome.measured;
    j["resumed"] = outcome.resumed;
    j["trials"] = ordered_json::array();
    for (const db::TrialRecord& trial : outcome.trials) j["trials"].push_back(TrialJson(trial));
    j["best"] = PickJson(outcome.best);
    j["search_best"] = PickJson(outcome.search_best);
    j["default"] = PickJson(outcome.default_trial);
    AddVerdictJson(j, outcome.sweep.verdict);
    // The top finalist's same-round pairs with the default (speedup > 1: better);
    // null without a final round or with fewer than 6 pairs.
    if (outcome.winner_pairs) {
      j["final_pairs"] = PairedEstimateJson(outcome.winner_pairs->estimate);
      j["final_pairs"]["outcome"] = tuner::PairedOutcomeName(outcome.winner_pairs->outcome);
    } else {
      j["final_pairs"] = nullptr;
    }
    if (outcome.warmup) {
      j["warmup"] = {{"passes", outcome.warmup->passes},
                     {"stable", outcome.warmup->stable},
                     {"seconds", outcome.warmup->seconds}};
    } else {
      j["warmup"] = nullptr;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    PrintHuman(outcome, workload, unit);
  }
  if (!outcome.best) {
    return Status::Corruption("sweep " + std::to_string(outcome.sweep.id) +
                              " has no validated trial: every config failed or corrupted data "
                              "(`artune results --sweep " +
                              std::to_string(outcome.sweep.id) + "` shows why)");
  }
  return Status::Ok();
}

}  // namespace

void RegisterSweep(CLI::App& root, Context& context) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* command = root.add_subcommand(
      "sweep",
      "Search transport knobs (eager_threshold x chunk_size by default) for the fastest config "
      "on this link and workload; every trial validated and stored");
  AddKnobFlags(*command, flags->knobs);
  command->add_option("--knob", flags->axes,
                      "A knob axis: NAME=LO..HI:xF (geometric) or NAME=a,b,c; repeatable. "
                      "Default: eager_threshold=256B..256KiB:x2 and chunk_size=16KiB..4MiB:x2. "
                      "Only knobs a running transport takes live (not fabric or verbs_*: "
                      "`artune config show` marks them)");
  command->add_option("--scheme", flags->scheme, "TF-gRPC-Bench payload scheme")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  command->add_option("--classes", flags->classes,
                      "Buffer classes of the scheme, e.g. S,M,L (default S,M for uniform, S,M,L "
                      "otherwise)");
  command->add_option("--buffers", flags->buffers, "Buffers per scheme message")
      ->capture_default_str();
  command
      ->add_option("--workload", flags->capture_id,
                   "Replay stored capture ID (per-method sizes and mix; `artune captures` "
                   "lists them) instead of a scheme")
      ->excludes("--scheme");
  command
      ->add_option("--replay-messages", flags->replay_messages, "Messages in a capture replay list")
      ->capture_default_str();
  command->add_option("--objective", flags->objective, "What to optimise")
      ->check(CLI::IsMember(
          {"latency-p50", "latency-p99", "bandwidth", "ps-throughput", "workload-time"}))
      ->capture_default_str();
  command->add_option("--peer", flags->peer,
                      "host:port of `artune serve` (default: a loopback server in this process)");
  command->add_option("--fabric", flags->fabric, "tcp | verbs | shm | auto (default: the config's)")
      ->check(CLI::IsMember({"tcp", "verbs", "auto", "shm"}));
  command
      ->add_option("--strategy", flags->strategy,
                   "grid (every point) or adaptive (pattern search, far fewer trials)")
      ->check(CLI::IsMember({"grid", "adaptive"}))
      ->capture_default_str();
  command->add_option("--repeats", flags->repeats, "Measurements per trial (median and 95% CI)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  command->add_option("--warmup", flags->warmup_s, "Warm-up seconds per trial")
      ->capture_default_str();
  command
      ->add_option("--duration", flags->duration_s,
                   "Seconds per measurement (a workload replay makes as many passes as fit; "
                   "workload-time is the seconds of one pass)")
      ->capture_default_str();
  command
      ->add_option("--inflight", flags->inflight,
                   "Calls in flight (bandwidth, ps, workload); default: with --workload the "
                   "capture's p50 of calls in flight (at most 64), else 8")
      ->check(CLI::Range(1, 1024));
  command
      ->add_option("--finalists", flags->finalists,
                   "Best configs of the search measured again with the default at the end; the "
                   "winner is chosen on those measurements")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command
      ->add_option("--final-rounds", flags->final_rounds,
                   "Interleaved rounds of that final measurement (each config once per round)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command->add_option("--seed", flags->seed, "Payload seed")->capture_default_str();
  command->add_option("--resume", flags->resume,
                      "Continue stored sweep ID with its stored settings; finished trials are "
                      "not repeated");
  command->add_flag("--json", flags->json, "Print one JSON object");
  command->callback(
      [flags, &context] { RunCommand(context, [&] { return RunSweepCommand(*flags, context); }); });
}

}  // namespace artune::cli
