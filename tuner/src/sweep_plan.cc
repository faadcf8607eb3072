#include "artune/tuner/sweep_plan.h"

#include <algorithm>
#include <exception>
#include <sstream>

#include "artune/transport/knobs.h"
#include "artune/tuner/background_load.h"
#include "artune/tuner/payload.h"
#include "artune/tuner/strategy.h"
#include "hostname.h"

namespace artune::tuner {
namespace {

// The stored "workload_time" parameter of sweeps whose workload-time is the seconds
// of one pass, averaged over the passes of a --duration measurement.
constexpr const char* kWorkloadTimePerPass = "seconds_per_pass";

}  // namespace

Result<Workload> WorkloadOf(const SweepPlan& plan, db::Store& store) {
  if (plan.capture_id != 0) {
    ReplayOptions replay;
    replay.messages = plan.replay_messages;
    replay.seed = plan.seed;
    return LoadCaptureWorkload(store, plan.capture_id, replay);
  }
  PayloadSpec spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, ParseScheme(plan.scheme));
  std::string classes = plan.classes;
  if (classes.empty()) classes = spec.scheme == Scheme::kUniform ? "S,M" : "S,M,L";
  ARTUNE_ASSIGN_OR_RETURN(spec.classes, ParseClasses(classes));
  spec.buffer_count = plan.buffers;
  spec.seed = plan.seed;
  return SchemeWorkload(spec);
}

std::map<std::string, std::string> SweepParameters(const SweepPlan& plan) {
  return {{"scheme", plan.scheme},
          {"classes", plan.classes},
          {"buffers", std::to_string(plan.buffers)},
          {"replay_messages", std::to_string(plan.replay_messages)},
          {"repeats", std::to_string(plan.repeats)},
          {"warmup_s", std::to_string(plan.warmup_s)},
          {"duration_s", std::to_string(plan.duration_s)},
          {"inflight", std::to_string(plan.inflight)},
          {"finalists", std::to_string(plan.finalists)},
          {"final_rounds", std::to_string(plan.final_rounds)},
          {"seed", std::to_string(plan.seed)},
          {"workload_time", kWorkloadTimePerPass}};
}

Status RestoreSweepPlan(const db::SweepRecord& sweep, SweepPlan& plan) {
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
    ARTUNE_ASSIGN_OR_RETURN(plan.scheme, get("scheme"));
    ARTUNE_ASSIGN_OR_RETURN(plan.classes, get("classes"));
    ARTUNE_ASSIGN_OR_RETURN(std::string buffers, get("buffers"));
    plan.buffers = static_cast<uint32_t>(std::stoul(buffers));
    ARTUNE_ASSIGN_OR_RETURN(std::string messages, get("replay_messages"));
    plan.replay_messages = static_cast<uint32_t>(std::stoul(messages));
    ARTUNE_ASSIGN_OR_RETURN(std::string repeats, get("repeats"));
    plan.repeats = static_cast<uint32_t>(std::stoul(repeats));
    ARTUNE_ASSIGN_OR_RETURN(std::string warmup, get("warmup_s"));
    plan.warmup_s = std::stod(warmup);
    ARTUNE_ASSIGN_OR_RETURN(std::string duration, get("duration_s"));
    plan.duration_s = std::stod(duration);
    ARTUNE_ASSIGN_OR_RETURN(std::string inflight, get("inflight"));
    plan.inflight = static_cast<uint32_t>(std::stoul(inflight));
    ARTUNE_ASSIGN_OR_RETURN(std::string seed, get("seed"));
    plan.seed = std::stoull(seed);
    // Sweeps stored before the final round had none of these: the defaults.
    if (p.count("finalists")) plan.finalists = static_cast<uint32_t>(std::stoul(p.at("finalists")));
    if (p.count("final_rounds")) {
      plan.final_rounds = static_cast<uint32_t>(std::stoul(p.at("final_rounds")));
    }
    // Before it, a workload measurement was two passes and workload-time their total.
    plan.replay_fixed_rounds = !p.count("workload_time");
    if (!plan.replay_fixed_rounds && p.at("workload_time") != kWorkloadTimePerPass) {
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
  plan.objective = sweep.objective;
  plan.strategy = sweep.strategy;
  plan.background_load = sweep.background_load;
  plan.peer = sweep.peer == "loopback" ? "" : sweep.peer;
  plan.axes.clear();
  std::istringstream specs(sweep.search_space);
  for (std::string spec; specs >> spec;) plan.axes.push_back(spec);
  if (sweep.workload.rfind("capture:", 0) == 0) {
    plan.capture_id = std::stoll(sweep.workload.substr(8));
  }
  return Status::Ok();
}

Result<ResumedSweep> LoadSweepToResume(db::Store& store, int64_t sweep_id, SweepPlan plan) {
  ResumedSweep resumed;
  ARTUNE_ASSIGN_OR_RETURN(resumed.record, store.GetSweep(sweep_id));
  ARTUNE_RETURN_IF_ERROR(RestoreSweepPlan(resumed.record, plan));
  resumed.plan = std::move(plan);
  for (const auto& [name, value] : resumed.record.base_config) {
    if (transport::FindKnob(name) == nullptr) continue;  // a knob this build dropped
    ARTUNE_RETURN_IF_ERROR(
        transport::SetKnob(resumed.base, name, value)
            .WithContext("stored base config of sweep " + std::to_string(resumed.record.id)));
  }
  return resumed;
}

Result<PreparedSweep> PrepareSweep(db::Store& store, const SweepPlan& plan,
                                   const transport::Config& base, db::SweepRecord record,
                                   bool resumed, const CapturedInflightFn& captured_inflight) {
  PreparedSweep prepared;
  prepared.base = base;
  ARTUNE_ASSIGN_OR_RETURN(prepared.space, ParseSearchSpace(plan.axes));
  ARTUNE_ASSIGN_OR_RETURN(prepared.objective, ParseObjective(plan.objective));
  ARTUNE_RETURN_IF_ERROR(MakeStrategy(plan.strategy, {1}, {0}).status());
  ARTUNE_ASSIGN_OR_RETURN(prepared.workload, WorkloadOf(plan, store));
  const Workload& workload = prepared.workload;

  prepared.inflight = plan.inflight;
  if (prepared.inflight == 0) {
    // As many calls in flight as the captured application kept (the replay list is
    // a burst like TensorFlow's per-step fetch), else the default.
    prepared.inflight = workload.captured_inflight > 0
                            ? std::min(workload.captured_inflight, kMaxCapturedInflight)
                            : kDefaultSweepInflight;
    if (workload.captured_inflight > 0 && captured_inflight) {
      captured_inflight(prepared.inflight, workload);
    }
  }
  TrialOptions options;
  options.objective = prepared.objective;
  options.repeats = plan.repeats;
  options.warmup_s = plan.warmup_s;
  options.duration_s = plan.duration_s;
  options.inflight = prepared.inflight;
  options.replay_fixed_rounds = plan.replay_fixed_rounds;
  ARTUNE_ASSIGN_OR_RETURN(prepared.target, TrialTarget::Open(base, plan.peer, options));

  if (!resumed) {
    record.host = LocalHostname();
    record.peer = prepared.target->peer();
    record.fabric = prepared.target->fabric();
    record.objective = std::string(ObjectiveName(prepared.objective));
    record.strategy = plan.strategy;
    record.workload = workload.description;
    // The inflight resolved above is what the trials measure with and what a
    // resumed sweep must measure with again.
    SweepPlan stored = plan;
    stored.inflight = prepared.inflight;
    record.parameters = SweepParameters(stored);
    record.background_load = plan.background_load;
  }
  prepared.record = std::move(record);

  prepared.options.final_round.finalists = plan.finalists;
  prepared.options.final_round.rounds = plan.final_rounds;
  ARTUNE_RETURN_IF_ERROR(ValidateFinalRoundOptions(prepared.options.final_round));
  return prepared;
}

Result<PreparedSweep> PrepareSweepFrom(db::Store& store, SweepPlan plan, const SweepStart& start,
                                       const CapturedInflightFn& captured_inflight) {
  if (start.resume == 0) {
    ARTUNE_ASSIGN_OR_RETURN(transport::Config base, start.load_config());
    if (!start.fabric.empty()) {
      ARTUNE_RETURN_IF_ERROR(transport::SetKnob(base, "fabric", start.fabric));
    }
    return PrepareSweep(store, plan, base, db::SweepRecord{}, false, captured_inflight);
  }
  ARTUNE_ASSIGN_OR_RETURN(ResumedSweep resumed, LoadSweepToResume(store, start.resume, plan));
  if (start.background_load_given && resumed.plan.background_load != plan.background_load) {
    return Status::InvalidArgument(
        "sweep " + std::to_string(start.resume) + " was measured under --background-load " +
        std::to_string(resumed.plan.background_load) +
        ": a resumed sweep keeps its load (its trials must compare); leave the flag out, or "
        "start a new sweep");
  }
  return PrepareSweep(store, resumed.plan, resumed.base, std::move(resumed.record), true,
                      captured_inflight);
}

Result<SweepOutcome> RunPreparedSweep(db::Store& store, PreparedSweep& prepared,
                                      const SweepProgressFn& progress) {
  ARTUNE_ASSIGN_OR_RETURN(BackgroundLoad load,
                          BackgroundLoad::Start(prepared.record.background_load));
  return RunSweep(store, *prepared.target, prepared.workload, prepared.space, prepared.base,
                  prepared.record, progress, prepared.options);
}

}  // namespace artune::tuner
