// artune sweep: search the transport's knobs (eager threshold x chunk size by
// default) for the fastest config on this link and workload; every trial measured,
// validated and stored on its own; --resume continues a killed sweep. Thin over the
// tuner library (artune/tuner/sweep_plan.h, sweep.h).
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "artune/cluster/cluster_run.h"
#include "artune/db/fallback_store.h"
#include "artune/db/store.h"
#include "artune/transport/config_loader.h"
#include "artune/tuner/background_load.h"
#include "artune/tuner/stats.h"
#include "artune/tuner/sweep.h"
#include "artune/tuner/sweep_choice.h"
#include "artune/tuner/sweep_plan.h"
#include "artune/tuner/trial_json.h"
#include "cluster_progress.h"
#include "command.h"
#include "format.h"
#include "knob_flags.h"
#include "progress.h"
#include "sweep_flags.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

std::string Number(double value) {
  std::ostringstream out;
  out << std::setprecision(value >= 100 ? 5 : 4) << value;
  return out.str();
}

// The final round's finalists pooled over their rounds, and the top finalist's
// same-round pairs with the default; nothing without a final round.
void PrintFinalRound(const tuner::SweepOutcome& outcome, std::string_view unit) {
  if (outcome.sweep.verdict && !outcome.sweep.verdict->finalists.empty()) {
    std::cout << std::left << std::setw(15) << "final round" << outcome.sweep.verdict->final_rounds
              << " interleaved rounds of the default and "
              << outcome.sweep.verdict->finalists.size() << " finalists (pooled):\n";
    const uint32_t rounds = outcome.sweep.verdict->final_rounds;
    for (const db::FinalistRecord& finalist : outcome.sweep.verdict->finalists) {
      const db::TrialRecord& pooled = finalist.pooled;
      std::cout << "  " << std::left << std::setw(13) << "" << db::TrialKnobKey(pooled.knobs)
                << "  ";
      if (pooled.status == db::TrialStatus::kOk) {
        std::cout << Number(pooled.objective) << " " << unit << " [" << Number(pooled.ci_low)
                  << ", " << Number(pooled.ci_high) << "], faster than the default in "
                  << finalist.rounds_won << " of " << rounds << " rounds\n";
      } else {
        std::cout << db::TrialStatusName(pooled.status) << ": " << pooled.error << "\n";
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
}

// `stored`: the store holds the whole sweep (else its id is not shown as one to
// look up).
void PrintHuman(const tuner::SweepOutcome& outcome, const tuner::Workload& workload,
                std::string_view unit, bool stored) {
  const db::SweepRecord& sweep = outcome.sweep;
  std::cout << "Sweep " << (stored ? std::to_string(sweep.id) : "(not stored)") << ": "
            << sweep.objective << " (" << sweep.goal << "), " << sweep.strategy << ", "
            << sweep.workload << ", " << sweep.fabric << " to " << sweep.peer << "\n";
  std::cout << outcome.trials.size() << " trials (" << outcome.measured << " measured now, "
            << outcome.resumed << " from the store)";
  if (sweep.background_load > 0) {
    std::cout << ", measured beside " << sweep.background_load << " CPU hog"
              << (sweep.background_load == 1 ? "" : "s") << " (--background-load)";
  }
  std::cout << "\n";
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
  PrintFinalRound(outcome, unit);
  if (outcome.default_remeasured) line("default again", outcome.default_remeasured);
  // The gain from the final round when there is one (interleaved, free of the
  // winner's curse and of drift), else from the search's own trials.
  const bool paired =
      outcome.best_remeasured && outcome.best_remeasured->status == db::TrialStatus::kOk &&
      outcome.default_remeasured && outcome.default_remeasured->status == db::TrialStatus::kOk;
  const std::optional<db::TrialRecord>& baseline =
      outcome.default_remeasured && outcome.default_remeasured->status == db::TrialStatus::kOk
          ? outcome.default_remeasured
          : outcome.default_trial;
  const std::optional<db::TrialRecord>& winner = paired ? outcome.best_remeasured : outcome.best;
  if (outcome.sweep.verdict) {
    std::cout << std::left << std::setw(15) << "verdict"
              << tuner::VerdictText(outcome.sweep.verdict->verdict) << "\n";
  }
  if (outcome.best_beats_default && baseline && baseline->status == db::TrialStatus::kOk &&
      winner->objective > 0 && baseline->objective > 0) {
    const bool lower = tuner::ParseGoal(sweep.goal) == tuner::ObjectiveGoal::kMin;
    const double gain =
        lower ? baseline->objective / winner->objective : winner->objective / baseline->objective;
    std::cout << "best vs default: " << std::fixed << std::setprecision(2) << gain << "x"
              << (paired ? " (pooled over the final round)" : "") << "\n";
  }
  for (const std::string& line : tuner::DescribeLayout(workload)) {
    std::cout << std::left << std::setw(15) << "layout" << line << "\n";
  }
  if (stored) {
    std::cout << "`artune results --sweep " << sweep.id << "` shows every trial and the heatmap\n";
  }
}

// What the command ends with when the store stopped taking writes: the sweep's
// part on file (if any) and how to finish it.
Status SweepNotStored(db::FallbackStore& store, int64_t sweep_id) {
  if (!store.not_stored()) return Status::Ok();
  if (store.FileHoldsSweep(sweep_id)) {
    return store.NotStoredStatus(
        "sweep " + std::to_string(sweep_id) +
        " is stored only in part (the trials measured after the store failed, the final round "
        "and the verdict are not; once it can be written, `artune sweep --resume " +
        std::to_string(sweep_id) + "` measures the missing ones)");
  }
  return store.NotStoredStatus("the sweep above was not stored");
}

// The progress line's text after each trial (drawn only on a terminal).
tuner::SweepProgressFn TrialProgress(ProgressLine& progress, const std::string& unit) {
  return [&progress, unit](const tuner::SweepProgress& p) {
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
}

// --json: the sweep, its trials, the picks, the verdict and the final round's pairs.
// `stored`: the store took every write; `not_stored` is what SweepNotStored said.
void PrintSweepJson(const tuner::SweepOutcome& outcome, const tuner::PreparedSweep& prepared,
                    const std::string& unit, db::FallbackStore& store, bool stored,
                    const Status& not_stored) {
  ordered_json j;
  // The id of a sweep the store holds, in part at least (see "not_stored").
  j["sweep_id"] = stored || store.FileHoldsSweep(outcome.sweep.id) ? ordered_json(outcome.sweep.id)
                                                                   : ordered_json(nullptr);
  j["stored"] = stored;
  if (!stored) j["not_stored"] = not_stored.message();
  tuner::AddSweepOutcomeJson(j, outcome, prepared.workload, prepared.inflight, unit);
  std::cout << j.dump(2) << "\n";
}

Status RunSweepCommand(SweepFlags flags, Context& context) {
  if (flags.mpi && flags.background_load_given) {
    return Status::InvalidArgument(
        "--background-load is for a single-link sweep, not a cluster run (--mpi)");
  }
  if (flags.mpi) return RunMpiSweepCommand(flags, context);
  ARTUNE_ASSIGN_OR_RETURN(flags.plan.background_load,
                          tuner::ParseBackgroundLoad(flags.background_load));
  for (const char* cluster_only :
       {"--pairs", "--pairs-seed", "--listen", "--ab", "--model-budget"}) {
    if (flags.cluster_flags_given.count(cluster_only)) {
      return Status::InvalidArgument(std::string(cluster_only) +
                                     " is for cluster runs: add --mpi (under mpirun or srun)");
    }
  }
  if (flags.plan.strategy == tuner::kModelMeasurement) {
    return Status::InvalidArgument(
        "--strategy model is for cluster runs (--mpi); on one link, `artune model measure` "
        "measures the link's model and `artune predict` predicts the best config from it");
  }
  // Looked at before measuring: a store that cannot be written is said at once;
  // the sweep then runs on a copy in memory and is printed all the same.
  ARTUNE_ASSIGN_OR_RETURN(
      std::unique_ptr<db::FallbackStore> store,
      db::FallbackStore::Open(db::ResolveDatabasePath(context.globals.db_path), std::cerr));
  tuner::SweepStart start;
  start.resume = flags.resume;
  start.load_config = [&flags]() -> Result<transport::Config> {
    ARTUNE_ASSIGN_OR_RETURN(transport::LoadedConfig loaded, LoadConfigFromFlags(flags.knobs));
    return loaded.config;
  };
  start.fabric = flags.fabric;
  start.background_load_given = flags.background_load_given;
  auto say_captured_inflight = [&flags](uint32_t inflight, const tuner::Workload& workload) {
    if (flags.json) return;
    std::cerr << "inflight " << inflight << ": the p50 of " << workload.captured_inflight_method
              << " calls in flight in the capture"
              << (workload.captured_inflight > tuner::kMaxCapturedInflight
                      ? " (" + std::to_string(workload.captured_inflight) + ", capped)"
                      : std::string())
              << " (--inflight sets it)\n";
  };
  ARTUNE_ASSIGN_OR_RETURN(
      tuner::PreparedSweep prepared,
      tuner::PrepareSweepFrom(*store, flags.plan, start, say_captured_inflight));

  ProgressLine progress(context);
  const std::string unit(tuner::ObjectiveUnit(prepared.objective));
  ARTUNE_ASSIGN_OR_RETURN(tuner::SweepOutcome outcome,
                          tuner::RunPreparedSweep(*store, prepared, TrialProgress(progress, unit)));
  progress.Clear();
  const bool stored = !store->not_stored();
  const Status not_stored = SweepNotStored(*store, outcome.sweep.id);
  if (flags.json) {
    PrintSweepJson(outcome, prepared, unit, *store, stored, not_stored);
  } else {
    PrintHuman(outcome, prepared.workload, unit, stored);
  }
  if (!outcome.best) {
    if (!not_stored.ok()) std::cerr << "artune: " << not_stored.message() << "\n";
    return Status::Corruption("sweep " + std::to_string(outcome.sweep.id) +
                              " has no validated trial: every config failed or corrupted data "
                              "(`artune results --sweep " +
                              std::to_string(outcome.sweep.id) + "` shows why)");
  }
  return not_stored;
}

// What to search and over which workload: the axes, the scheme or capture, the objective.
void AddSweepSearchFlags(CLI::App& command, SweepFlags& flags) {
  command.add_option("--knob", flags.plan.axes,
                     "A knob axis: NAME=LO..HI:xF (geometric) or NAME=a,b,c; repeatable. "
                     "Default: eager_threshold=256B..256KiB:x2 and chunk_size=16KiB..4MiB:x2. "
                     "Only knobs a running transport takes live (not fabric, idle_timeout_ms or "
                     "verbs_*: `artune config show` marks them)");
  command.add_option("--scheme", flags.plan.scheme, "TF-gRPC-Bench payload scheme")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  command.add_option("--classes", flags.plan.classes,
                     "Buffer classes of the scheme, e.g. S,M,L (default S,M for uniform, S,M,L "
                     "otherwise)");
  command.add_option("--buffers", flags.plan.buffers, "Buffers per scheme message")
      ->capture_default_str();
  command
      .add_option("--workload", flags.plan.capture_id,
                  "Replay stored capture ID (per-method sizes and mix; `artune captures` "
                  "lists them) instead of a scheme")
      ->excludes("--scheme");
  command
      .add_option("--replay-messages", flags.plan.replay_messages,
                  "Messages in a capture replay list")
      ->capture_default_str();
  command.add_option("--objective", flags.plan.objective, "What to optimise")
      ->check(CLI::IsMember(
          {"latency-p50", "latency-p99", "bandwidth", "ps-throughput", "workload-time"}))
      ->capture_default_str();
}

// How each trial is measured: against which server, fabric, strategy, repeats,
// durations, the final round and the background load.
void AddSweepMeasurementFlags(CLI::App& command, SweepFlags& flags) {
  command
      .add_option("--peer", flags.plan.peer,
                  "host:port of `artune serve` (default: a loopback server in this process)")
      ->check(HostPortValidator());
  command.add_option("--fabric", flags.fabric, "tcp | verbs | shm | auto (default: the config's)")
      ->check(CLI::IsMember({"tcp", "verbs", "auto", "shm"}));
  command
      .add_option("--strategy", flags.plan.strategy,
                  "grid (every point) or adaptive (pattern search, far fewer trials); with "
                  "--mpi also model (each link measures its link model and the best configs "
                  "are predicted from the models)")
      ->check(CLI::IsMember({"grid", "adaptive", "model"}))
      ->capture_default_str();
  command.add_option("--repeats", flags.plan.repeats, "Measurements per trial (median and 95% CI)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  command.add_option("--warmup", flags.plan.warmup_s, "Warm-up seconds per trial")
      ->capture_default_str();
  command
      .add_option("--duration", flags.plan.duration_s,
                  "Seconds per measurement (a workload replay makes as many passes as fit; "
                  "workload-time is the seconds of one pass)")
      ->capture_default_str();
  command
      .add_option("--inflight", flags.plan.inflight,
                  "Calls in flight (bandwidth, ps, workload); default: with --workload the "
                  "capture's p50 of calls in flight (at most 64), else 8")
      ->check(CLI::Range(1, 1024));
  command
      .add_option("--finalists", flags.plan.finalists,
                  "Best configs of the search measured again with the default at the end; the "
                  "winner is chosen on those measurements")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command
      .add_option("--final-rounds", flags.plan.final_rounds,
                  "Interleaved rounds of that final measurement (each config once per round)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command.add_option("--seed", flags.plan.seed, "Payload seed")->capture_default_str();
  command
      .add_option("--background-load", flags.background_load,
                  "Measure on a busy host: N CPU hogs (child processes spinning) run beside "
                  "every measurement and stop with the sweep; `all`: one per online core. "
                  "Stored with the sweep (--resume keeps it). A sweep on an idle host can pick "
                  "busy polling, which collapses when the cores are busy")
      ->type_name("N|all")
      ->capture_default_str();
}

// The cluster run (--mpi) and its own flags.
void AddSweepClusterFlags(CLI::App& command, SweepFlags& flags) {
  command.add_flag("--mpi", flags.mpi,
                   "Cluster run: every rank of `mpirun -np N --map-by node artune sweep --mpi "
                   "...` (or srun --mpi=pmix) serves, pairs of ranks measure round by round, "
                   "rank 0 stores every link; --resume takes a cluster run's ID");
  command
      .add_option("--pairs", flags.pairs,
                  "With --mpi: which ranks measure which, in rounds of disjoint pairs: ring "
                  "(neighbours), all (every pair), random:K (K random matchings, a sample)")
      ->capture_default_str();
  command.add_option("--pairs-seed", flags.pairs_seed, "With --mpi: the seed of random:K")
      ->capture_default_str();
  command.add_option("--listen", flags.listen,
                     "With --mpi: the address this rank serves on (default: the RDMA netdev's "
                     "over verbs, else the address the hostname resolves to)");
  command.add_option("--ab", flags.ab_config,
                     "With --mpi: measure the base config against this TOML config (as `artune "
                     "apply config` writes it), interleaved, on every link, instead of a sweep");
  command
      .add_option("--model-budget", flags.model_budget_s,
                  "With --mpi --strategy model: seconds each link spends measuring its model "
                  "(its polling modes the search space's, at the workload's calls in flight; "
                  "the first round always completes)")
      ->check(CLI::Range(0.5, 600.0))
      ->capture_default_str();
}

}  // namespace

void RegisterSweep(CLI::App& root, Context& context) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* command = root.add_subcommand(
      "sweep",
      "Search transport knobs (eager_threshold x chunk_size by default) for the fastest config "
      "on this link and workload; every trial validated and stored");
  AddKnobFlags(*command, flags->knobs);
  AddSweepSearchFlags(*command, *flags);
  AddSweepMeasurementFlags(*command, *flags);
  command->add_option("--resume", flags->resume,
                      "Continue stored sweep ID with its stored settings; finished trials are "
                      "not repeated");
  command->add_flag("--json", flags->json, "Print one JSON object");
  AddSweepClusterFlags(*command, *flags);
  command->footer(
      "When the store (--db) cannot be written (read-only, disk full) the sweep is measured "
      "and printed all the same: stderr says so before measuring and why at the end, --json "
      "has \"stored\": false and \"not_stored\", and the exit code is 1.");
  command->callback([flags, command, &context] {
    for (const char* name : {"--pairs", "--pairs-seed", "--listen", "--ab", "--model-budget"}) {
      if (command->count(name) > 0) flags->cluster_flags_given.insert(name);
    }
    flags->final_rounds_given = command->count("--final-rounds") > 0;
    flags->background_load_given = command->count("--background-load") > 0;
    RunCommand(context, [&] { return RunSweepCommand(*flags, context); });
  });
}

// `artune sweep --mpi`: the cluster room runs it (artune/cluster/cluster_run.h) and
// rank 0 prints what it reports. A build without MPI says how to get one.
Status RunMpiSweepCommand([[maybe_unused]] const SweepFlags& flags,
                          [[maybe_unused]] Context& context) {
#if ARTUNE_HAVE_MPI
  cluster::ClusterRunRequest request;
  request.db_path = context.globals.db_path;
  request.load_config = [&flags] { return LoadConfigFromFlags(flags.knobs); };
  request.fabric = flags.fabric;
  request.plan = flags.plan;
  request.resume = flags.resume;
  request.ab_config = flags.ab_config;
  request.model_budget_s = flags.model_budget_s;
  request.final_rounds_given = flags.final_rounds_given;
  request.pairs = flags.pairs;
  request.pairs_seed = flags.pairs_seed;
  request.listen = flags.listen;
  request.exit_code_for = ExitCodeFor;
  ClusterProgress progress(!context.globals.quiet, flags.json);
  return cluster::RunCluster(request, progress);
#else
  return Status::Unavailable(
      "this artune was built without MPI: install Open MPI (apt-get install openmpi-bin "
      "libopenmpi-dev; scripts/setup does) and rebuild (cmake -DARTUNE_WITH_MPI=ON)");
#endif
}

}  // namespace artune::cli
