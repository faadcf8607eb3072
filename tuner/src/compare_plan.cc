#include "artune/tuner/compare_plan.h"

#include <charconv>
#include <filesystem>
#include <vector>

#include "artune/transport/config_loader.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/background_load.h"
#include "artune/tuner/config_emit.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {
namespace {

using transport::Config;

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

// The tuned side's config. With a sweep: its chosen config (sweep_choice.h, the
// same knobs `artune apply config --sweep` writes) laid over the baseline, so the
// two sides differ only by the swept knobs; `choice` is set. Else a file on its own.
Result<Config> TunedConfig(const CompareRequest& request, const StoreOpener& open_store,
                           const Config& baseline, std::string& source,
                           std::optional<SweepChoice>& choice) {
  if (request.sweep_id.has_value()) {
    ARTUNE_ASSIGN_OR_RETURN(auto store, open_store());
    ARTUNE_ASSIGN_OR_RETURN(choice, ReadSweepChoice(*store, *request.sweep_id));
    std::vector<KnobSetting> settings;
    for (const auto& [name, value] : choice->knobs) {
      settings.push_back({name, value, "sweep " + std::to_string(*request.sweep_id)});
    }
    source = "sweep " + std::to_string(*request.sweep_id) + " winner " + choice->KnobText() + ", " +
             choice->How() + (request.baseline_path.empty() ? "" : ", over the baseline");
    return ApplyKnobSettings(baseline, settings);
  }
  std::string path = request.tuned_path;
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

// The request's inflight when given; else what the sweep measured with (its stored
// parameters["inflight"]), so the tuned config is compared in the regime the sweep
// optimised it for; else the sweep's own default. A sweep with no usable stored
// value falls back to that default with a note.
CompareInflight ReplayInflight(const CompareRequest& request,
                               const std::optional<db::SweepRecord>& sweep, std::ostream& notes) {
  if (request.inflight.has_value()) return {*request.inflight, "flag", "--inflight"};
  const CompareInflight fallback{kDefaultSweepInflight, "default",
                                 "the default of `artune sweep --inflight`"};
  if (!sweep.has_value()) return fallback;
  const std::string sweep_name = "sweep " + std::to_string(sweep->id);
  const auto stored = sweep->parameters.find("inflight");
  const std::string text = stored == sweep->parameters.end() ? "" : stored->second;
  uint32_t calls = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), calls);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || calls < 1 ||
      calls > 1024) {
    notes << "artune: note: " << sweep_name
          << (text.empty() ? " stored no inflight" : " stored inflight '" + text + "'")
          << "; replaying with " << kDefaultSweepInflight
          << " calls in flight (the sweep's default; --inflight N to choose)\n";
    return fallback;
  }
  return {calls, "sweep", "as " + sweep_name + " measured"};
}

Result<Workload> BuildWorkload(const CompareRequest& request, const StoreOpener& open_store) {
  if (request.capture_id.has_value()) {
    ARTUNE_ASSIGN_OR_RETURN(auto store, open_store());
    ReplayOptions options;
    options.messages = request.messages;
    options.seed = request.seed;
    return LoadCaptureWorkload(*store, *request.capture_id, options);
  }
  PayloadSpec spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, ParseScheme(request.scheme));
  spec.classes = {BufferClass::kSmall, BufferClass::kMedium, BufferClass::kLarge};
  spec.seed = request.seed;
  return SchemeWorkload(spec);
}

PairedCompareOptions CompareOptionsOf(const CompareRequest& request) {
  PairedCompareOptions options;
  options.repeats = request.repeats;
  options.replay.rounds = request.rounds;
  options.replay.min_duration_s = request.duration_s;
  options.replay.warmup_rounds = request.warmup_rounds;
  options.peer = request.peer;
  return options;
}

}  // namespace

Result<ComparePlan> PlanCompare(const CompareRequest& request, const StoreOpener& open_store,
                                std::ostream& notes) {
  ComparePlan plan;
  plan.options = CompareOptionsOf(request);
  ARTUNE_RETURN_IF_ERROR(ValidatePairedCompareOptions(plan.options));
  ARTUNE_ASSIGN_OR_RETURN(plan.background_load, ParseBackgroundLoad(request.background_load));
  if (request.baseline_path.empty()) {
    plan.baseline.source = "transport defaults";
  } else {
    ARTUNE_ASSIGN_OR_RETURN(plan.baseline.config, LoadFileOnly(request.baseline_path));
    plan.baseline.source = "file " + request.baseline_path;
  }
  ARTUNE_ASSIGN_OR_RETURN(plan.tuned.config, TunedConfig(request, open_store, plan.baseline.config,
                                                         plan.tuned.source, plan.choice));
  plan.inflight = ReplayInflight(
      request, plan.choice ? std::optional<db::SweepRecord>(plan.choice->sweep) : std::nullopt,
      notes);
  if (!request.fabric.empty()) {
    for (CompareSideSpec* side : {&plan.baseline, &plan.tuned}) {
      ARTUNE_RETURN_IF_ERROR(transport::SetKnob(side->config, "fabric", request.fabric));
    }
  }
  if (!request.peer.empty()) {
    ARTUNE_RETURN_IF_ERROR(
        CheckComparableOverOneConnection(plan.baseline.config, plan.tuned.config));
  }
  ARTUNE_ASSIGN_OR_RETURN(plan.workload, BuildWorkload(request, open_store));
  plan.options.replay.inflight = plan.inflight.calls;
  return plan;
}

Result<PairedCompareResult> MeasureCompare(const ComparePlan& plan) {
  // The hogs run while both sides are measured and are gone before anything is
  // printed (the destructor stops them on an error too).
  ARTUNE_ASSIGN_OR_RETURN(BackgroundLoad load, BackgroundLoad::Start(plan.background_load));
  Result<PairedCompareResult> measured =
      RunPairedCompare(plan.baseline, plan.tuned, plan.workload, plan.options);
  load.Stop();
  return measured;
}

}  // namespace artune::tuner
