#include "artune/watch/watcher.h"

#include <cmath>
#include <iomanip>
#include <sstream>
#include <utility>

#include "artune/model/predict.h"
#include "artune/transport/knobs.h"

namespace artune::watch {
namespace {

std::string Percent(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << fraction * 100 << " %";
  return out.str();
}

std::string Ratio(double ratio) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << ratio << "x";
  return out.str();
}

// The bucket holding most of a profile's bytes, as a label ("1MiB").
std::string HeaviestBucket(const TrafficProfile& profile) {
  int heaviest = 0;
  double most = -1;
  for (int b = 0; b < transport::kLog2BucketCount; ++b) {
    const double bytes =
        static_cast<double>(profile.messages[b]) * static_cast<double>(BucketMiddle(b));
    if (bytes > most) {
      most = bytes;
      heaviest = b;
    }
  }
  return model::BucketLabel(heaviest);
}

void AddEvidence(db::WatchEventRecord& event, const tuner::PairedCompareResult& compared) {
  event.paired_median = compared.verdict.estimate.median;
  event.paired_low = compared.verdict.estimate.low;
  event.paired_high = compared.verdict.estimate.high;
  event.pairs = static_cast<uint32_t>(compared.paired_speedups.size());
  event.verdict = tuner::PairedOutcomeName(compared.verdict.outcome);
}

std::string MeasuredText(const tuner::PairedCompareResult& compared) {
  const tuner::MedianEstimate& e = compared.verdict.estimate;
  return Ratio(e.median) + " (" + Ratio(e.low) + ".." + Ratio(e.high) + " over " +
         std::to_string(compared.paired_speedups.size()) + " pairs, " +
         tuner::PairedOutcomeName(compared.verdict.outcome) + ")";
}

}  // namespace

Watcher::Watcher(WatchedLink& link, model::LinkModel model, WatcherOptions options)
    : link_(link), model_(std::move(model)), options_(std::move(options)) {}

std::string Watcher::KnobKeyOf(const transport::Config& config) const {
  std::map<std::string, std::string> knobs;
  for (const tuner::KnobAxis& axis : options_.space.axes) {
    knobs[std::string(axis.name())] =
        transport::FormatKnobValue(*axis.knob, axis.knob->get(config));
  }
  return db::TrialKnobKey(knobs);
}

db::WatchEventRecord Watcher::EventOf(db::WatchAction action, std::string reason, double drift,
                                      const transport::Config& in_force) const {
  db::WatchEventRecord event;
  event.servers = options_.servers_text;
  event.action = action;
  event.reason = std::move(reason);
  event.drift = std::clamp(drift, 0.0, 1.0);
  event.window_slices = window_.total;
  event.in_force_knobs = KnobKeyOf(in_force);
  event.profile_json = ProfileJson(window_);
  return event;
}

Result<std::optional<db::WatchEventRecord>> Watcher::Step(WatchClock::time_point now) {
  ARTUNE_ASSIGN_OR_RETURN(const transport::Stats reading, link_.ReadCounters());
  if (last_reading_) window_ += ProfileBetween(*last_reading_, reading);
  last_reading_ = reading;
  if (window_.total < options_.policy.min_window_messages) {
    return std::optional<db::WatchEventRecord>();
  }
  Result<db::WatchEventRecord> judged = Judge(now);
  const bool decided = judged.ok() && !judged->reason.empty();
  window_ = TrafficProfile{};  // a new window starts, whatever was decided
  if (!judged.ok()) return judged.status();
  if (!decided) return std::optional<db::WatchEventRecord>();
  return std::optional<db::WatchEventRecord>(std::move(*judged));
}

// An event with an empty reason: nothing to record (the profile held).
Result<db::WatchEventRecord> Watcher::Judge(WatchClock::time_point now) {
  if (!reference_) {
    ARTUNE_ASSIGN_OR_RETURN(const transport::Config in_force, link_.ConfigInForce());
    reference_ = window_;
    return EventOf(db::WatchAction::kBaseline,
                   "reference profile: " + std::to_string(window_.total) +
                       " messages, most bytes in the " + HeaviestBucket(window_) + " bucket",
                   0, in_force);
  }
  if (before_change_) return Recheck(now);
  const double drift = Drift(window_, *reference_);
  if (drift < options_.policy.drift_threshold) return db::WatchEventRecord{};
  return PredictAndConfirm(now, drift);
}

// The window after a change: the changed config against the one before it, on this
// window's traffic. Slower beyond noise: the one before goes back.
Result<db::WatchEventRecord> Watcher::Recheck(WatchClock::time_point now) {
  const transport::Config before = *before_change_;
  before_change_.reset();
  ARTUNE_ASSIGN_OR_RETURN(const transport::Config in_force, link_.ConfigInForce());
  const double drift = Drift(window_, *reference_);
  ARTUNE_ASSIGN_OR_RETURN(
      const tuner::Workload workload,
      WorkloadFromProfile(window_, options_.replay_messages, /*seed=*/window_.total));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::PairedCompareResult compared,
                          link_.Compare(before, in_force, workload));
  if (compared.verdict.outcome != tuner::PairedOutcome::kSlower) {
    db::WatchEventRecord event = EventOf(
        db::WatchAction::kKeep,
        "re-check: the changed config holds against the one before, " + MeasuredText(compared),
        drift, in_force);
    AddEvidence(event, compared);
    return event;
  }
  db::WatchEventRecord event =
      EventOf(options_.dry_run ? db::WatchAction::kHold : db::WatchAction::kRollBack,
              "re-check: the changed config measured slower than the one before, " +
                  MeasuredText(compared) + (options_.dry_run ? "; --dry-run: not rolled back" : ""),
              drift, in_force);
  event.candidate_knobs = KnobKeyOf(before);
  AddEvidence(event, compared);
  if (!options_.dry_run) {
    ARTUNE_RETURN_IF_ERROR(link_.Push(before).WithContext("rolling back"));
    changes_.Record(now);
  }
  return event;
}

Result<db::WatchEventRecord> Watcher::PredictAndConfirm(WatchClock::time_point now, double drift) {
  ARTUNE_ASSIGN_OR_RETURN(const transport::Config in_force, link_.ConfigInForce());
  ARTUNE_ASSIGN_OR_RETURN(
      const tuner::Workload workload,
      WorkloadFromProfile(window_, options_.replay_messages, /*seed=*/window_.total));
  const double inflight = std::min<double>(options_.inflight, workload.messages.size());
  ARTUNE_ASSIGN_OR_RETURN(const model::Prediction prediction,
                          model::Predict(model_, workload, options_.space, in_force, inflight));
  ARTUNE_ASSIGN_OR_RETURN(const model::PassCost in_force_cost,
                          model::CostPass(model_, workload, in_force, inflight));
  const model::ConfigPrediction& best = prediction.best();
  const double margin = in_force_cost.seconds > 0
                            ? (in_force_cost.seconds - best.cost.seconds) / in_force_cost.seconds
                            : 0;
  const std::string drifted =
      "drift " + Percent(drift) + " (most bytes now in the " + HeaviestBucket(window_) + " bucket)";
  auto keep = [&](std::string why) {
    db::WatchEventRecord event =
        EventOf(db::WatchAction::kKeep, drifted + ": " + why, drift, in_force);
    event.candidate_knobs = db::TrialKnobKey(best.knobs);
    event.predicted_margin = margin;
    return event;
  };
  if (db::TrialKnobKey(best.knobs) == KnobKeyOf(in_force) || margin < options_.policy.min_margin) {
    reference_ = window_;
    return keep("the best predicted config saves " + Percent(margin) +
                " of the pass (--min-margin " + Percent(options_.policy.min_margin) +
                "): the config in force stays");
  }
  std::string why_not;
  if (!changes_.MayChange(options_.policy, now, &why_not)) {
    db::WatchEventRecord event = keep("predicted to save " + Percent(margin) + "; " + why_not);
    event.action = db::WatchAction::kHold;
    return event;  // the reference stays: a later window tries again
  }
  ARTUNE_ASSIGN_OR_RETURN(const tuner::PairedCompareResult compared,
                          link_.Compare(in_force, best.config, workload));
  reference_ = window_;
  if (compared.verdict.outcome != tuner::PairedOutcome::kFaster) {
    db::WatchEventRecord event = keep("predicted to save " + Percent(margin) + ", measured " +
                                      MeasuredText(compared) + ": the config in force stays");
    AddEvidence(event, compared);
    return event;
  }
  db::WatchEventRecord event = EventOf(
      options_.dry_run ? db::WatchAction::kHold : db::WatchAction::kPush,
      drifted + ": predicted to save " + Percent(margin) + ", measured " + MeasuredText(compared) +
          (options_.dry_run ? "; --dry-run: not pushed" : "; pushed live"),
      drift, in_force);
  event.candidate_knobs = db::TrialKnobKey(best.knobs);
  event.predicted_margin = margin;
  AddEvidence(event, compared);
  if (!options_.dry_run) {
    ARTUNE_RETURN_IF_ERROR(link_.Push(best.config).WithContext("pushing the measured config"));
    changes_.Record(now);
    before_change_ = in_force;
  }
  return event;
}

Status RunWatchLoop(Watcher& watcher, const WatchLoop& loop) {
  const auto started = WatchClock::now();
  uint32_t failed_in_a_row = 0;
  while (true) {
    Result<std::optional<db::WatchEventRecord>> step = watcher.Step(WatchClock::now());
    if (!step.ok()) {
      if (++failed_in_a_row >= loop.max_failed_steps) return step.status();
      if (loop.on_error) loop.on_error(step.status());
    } else {
      failed_in_a_row = 0;
      if (*step && loop.on_event) ARTUNE_RETURN_IF_ERROR(loop.on_event(**step));
    }
    double wait_s = loop.interval_s;
    if (loop.duration_s > 0) {
      const double left =
          loop.duration_s - std::chrono::duration<double>(WatchClock::now() - started).count();
      if (left <= 0) return Status::Ok();
      wait_s = std::min(wait_s, left);
    }
    if (!loop.wait(wait_s)) return Status::Ok();
  }
}

}  // namespace artune::watch
