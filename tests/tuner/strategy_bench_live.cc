#include "strategy_bench_live.h"

#include <chrono>
#include <cmath>
#include <memory>

#include "artune/db/store.h"
#include "artune/tuner/strategy.h"

namespace artune::tuner::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// How much worse `cost` is than `reference`, in % of the reference (costs are
// minimised: a throughput enters negated).
double GapPct(double cost, double reference) {
  if (reference == 0) return NAN;
  return 100.0 * (cost - reference) / std::fabs(reference);
}

std::string Minutes(double seconds) {
  char text[32];
  if (seconds < 90) {
    std::snprintf(text, sizeof text, "%.0fs", seconds);
  } else {
    std::snprintf(text, sizeof text, "%.0fm%02.0fs", std::floor(seconds / 60),
                  std::fmod(seconds, 60));
  }
  return text;
}

class LiveBench {
 public:
  using MeasureFn = std::function<Result<TrialMeasurement>(const Point&)>;

  LiveBench(const LiveOptions& options, TrialTarget& target, std::FILE* progress)
      : options_(options),
        target_(target),
        progress_(progress),
        lower_(LowerIsBetter(options.trial.objective)),
        unit_(ObjectiveUnit(options.trial.objective)) {}

  double Cost(double value) const { return lower_ ? value : -value; }

  // One normal trial measurement of `point`, with a progress line.
  Result<TrialMeasurement> Measure(const Point& point, const std::string& phase) {
    ARTUNE_ASSIGN_OR_RETURN(
        TrialMeasurement m,
        target_.Measure(options_.space.Apply(point, options_.base), options_.workload));
    ++done_;
    const double elapsed = SecondsSince(started_);
    const double eta = done_ < planned_ ? elapsed / static_cast<double>(done_) *
                                              static_cast<double>(planned_ - done_)
                                        : 0;
    const std::string knobs = db::TrialKnobKey(options_.space.KnobValues(point));
    if (m.status == db::TrialStatus::kOk) {
      std::fprintf(progress_, "%-9s %3zu/~%zu %6s ETA %-7s %-40s %10.1f %s [%.1f, %.1f]\n",
                   phase.c_str(), done_, planned_, Minutes(elapsed).c_str(), Minutes(eta).c_str(),
                   knobs.c_str(), m.objective, unit_.c_str(), m.ci_low, m.ci_high);
    } else {
      std::fprintf(progress_, "%-9s %3zu/~%zu %6s ETA %-7s %-40s %s: %s\n", phase.c_str(), done_,
                   planned_, Minutes(elapsed).c_str(), Minutes(eta).c_str(), knobs.c_str(),
                   std::string(db::TrialStatusName(m.status)).c_str(), m.error.c_str());
    }
    std::fflush(progress_);
    return m;
  }

  Result<LiveReport> Run() {
    const SearchSpace& space = options_.space;
    const Point start = space.Nearest(options_.base);
    LiveReport report;
    report.fabric = target_.fabric();
    report.peer = target_.peer();
    report.objective = std::string(ObjectiveName(options_.trial.objective));
    report.unit = unit_;
    report.workload = options_.workload.description;
    report.space = space.Canonical();
    report.grid_points = space.GridSize();
    planned_ = report.grid_points +
               MakeAdaptiveStrategy(space.AxisSizes(), start)->EstimatedTrials() +
               2 * static_cast<size_t>(options_.rounds);
    started_ = Clock::now();

    // The sweep's own cold-start rule: warm the whole path before the first trial.
    ARTUNE_ASSIGN_OR_RETURN(report.warmup,
                            target_.WarmUp(options_.base, options_.workload, WarmupOptions{}));
    std::fprintf(progress_, "warm-up: %u passes, %s, %.1f s%s%s\n", report.warmup.passes,
                 report.warmup.stable ? "stable" : "not stable", report.warmup.seconds,
                 report.warmup.error.empty() ? "" : ", ", report.warmup.error.c_str());

    std::map<Point, TrialMeasurement> grid_measured;
    const MeasureFn measure_grid = [&](const Point& p) -> Result<TrialMeasurement> {
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement m, Measure(p, "grid"));
      grid_measured[p] = m;
      return m;
    };
    // The adaptive search answered from the grid's measurements: what the strategy
    // picks given exactly the grid's numbers (no new measurement).
    const MeasureFn replay_grid = [&](const Point& p) -> Result<TrialMeasurement> {
      return grid_measured.at(p);
    };
    const MeasureFn measure_live = [&](const Point& p) { return Measure(p, "adaptive"); };

    auto grid = MakeGridStrategy(space.AxisSizes());
    ARTUNE_ASSIGN_OR_RETURN(report.grid, Search(*grid, "grid", measure_grid));
    auto replay = MakeAdaptiveStrategy(space.AxisSizes(), start);
    ARTUNE_ASSIGN_OR_RETURN(report.replay,
                            Search(*replay, "adaptive (on the grid's numbers)", replay_grid));
    auto live = MakeAdaptiveStrategy(space.AxisSizes(), start);
    ARTUNE_ASSIGN_OR_RETURN(report.live, Search(*live, "adaptive (live)", measure_live));

    const double grid_trials = static_cast<double>(report.grid.trials);
    for (PickReport* pick : {&report.grid, &report.replay, &report.live}) {
      pick->share = grid_trials > 0 ? static_cast<double>(pick->trials) / grid_trials : 0;
      if (!pick->found || !report.grid.found) continue;
      auto measured = grid_measured.find(pick->point);
      if (measured == grid_measured.end() || measured->second.status != db::TrialStatus::kOk)
        continue;
      pick->grid_value = measured->second.objective;
      pick->gap_on_grid_pct = GapPct(Cost(*pick->grid_value), Cost(report.grid.value));
    }
    planned_ = done_ + 2 * static_cast<size_t>(options_.rounds);
    if (report.grid.found && report.live.found) {
      ARTUNE_ASSIGN_OR_RETURN(report.head_to_head,
                              HeadToHeadOf(report.grid.point, report.live.point));
    }
    report.seconds = SecondsSince(started_);
    return report;
  }

 private:
  Result<PickReport> Search(Strategy& strategy, const std::string& label,
                            const MeasureFn& measure) {
    const auto started = Clock::now();
    PickReport pick;
    pick.strategy = label;
    std::optional<double> best_cost;
    Status status = strategy.Search([&](const Point& p) -> Result<std::optional<double>> {
      ++pick.trials;
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement m, measure(p));
      if (m.status != db::TrialStatus::kOk) return std::optional<double>();
      const double cost = Cost(m.objective);
      if (!best_cost || cost < *best_cost) {
        best_cost = cost;
        pick.found = true;
        pick.point = p;
        pick.value = m.objective;
        pick.ci_low = m.ci_low;
        pick.ci_high = m.ci_high;
      }
      return std::optional<double>(cost);
    });
    ARTUNE_RETURN_IF_ERROR(status);
    if (pick.found) pick.knobs = db::TrialKnobKey(options_.space.KnobValues(pick.point));
    pick.seconds = SecondsSince(started);
    return pick;
  }

  // Grid pick, adaptive pick, grid pick, adaptive pick, ... (see the header).
  Result<HeadToHead> HeadToHeadOf(const Point& grid_pick, const Point& adaptive_pick) {
    const auto started = Clock::now();
    HeadToHead h2h;
    h2h.rounds = options_.rounds;
    h2h.same_point = grid_pick == adaptive_pick;
    std::vector<double> paired;
    for (uint32_t round = 0; round < options_.rounds; ++round) {
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement g, Measure(grid_pick, "h2h grid"));
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement a, Measure(adaptive_pick, "h2h adapt"));
      if (g.status != db::TrialStatus::kOk || a.status != db::TrialStatus::kOk)
        continue;  // a round counts only whole
      ++h2h.rounds_ok;
      h2h.grid_values.push_back(g.objective);
      h2h.adaptive_values.push_back(a.objective);
      paired.push_back(GapPct(Cost(a.objective), Cost(g.objective)));
    }
    if (h2h.rounds_ok > 0) {
      h2h.grid = MedianWithConfidence(h2h.grid_values);
      h2h.adaptive = MedianWithConfidence(h2h.adaptive_values);
      h2h.gap_pct = GapPct(Cost(h2h.adaptive.median), Cost(h2h.grid.median));
      h2h.paired_gap_pct = MedianWithConfidence(paired);
    }
    h2h.seconds = SecondsSince(started);
    return h2h;
  }

  const LiveOptions& options_;
  TrialTarget& target_;
  std::FILE* progress_;
  const bool lower_;
  const std::string unit_;
  Clock::time_point started_;
  size_t done_ = 0, planned_ = 0;
};

nlohmann::ordered_json EstimateJson(const MedianEstimate& estimate) {
  return {{"median", estimate.median},
          {"ci_low", estimate.low},
          {"ci_high", estimate.high},
          {"confidence", estimate.achieved_confidence},
          {"count", estimate.count}};
}

nlohmann::ordered_json OptionalJson(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json PickJson(const PickReport& pick) {
  nlohmann::ordered_json j = {{"strategy", pick.strategy},
                              {"trials", pick.trials},
                              {"share", pick.share},
                              {"seconds", pick.seconds}};
  if (!pick.found) {
    j["best"] = nullptr;
    return j;
  }
  j["best"] = {{"knobs", pick.knobs},
               {"value", pick.value},
               {"ci_low", pick.ci_low},
               {"ci_high", pick.ci_high},
               {"grid_value", OptionalJson(pick.grid_value)},
               {"gap_on_grid_pct", OptionalJson(pick.gap_on_grid_pct)}};
  return j;
}

}  // namespace

Result<LiveReport> RunLive(const LiveOptions& options, std::FILE* progress) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<TrialTarget> target,
                          TrialTarget::Open(options.base, options.peer, options.trial));
  LiveBench bench(options, *target, progress);
  return bench.Run();
}

void PrintLiveReport(const LiveReport& r, std::FILE* out) {
  const char* unit = r.unit.c_str();
  std::fprintf(out, "\nlive: %s to %s, %s, %s, %zu grid points, %s\n", r.fabric.c_str(),
               r.peer.c_str(), r.objective.c_str(), r.workload.c_str(), r.grid_points,
               Minutes(r.seconds).c_str());
  std::fprintf(out, "%-34s %6s %6s  %-40s %10s  %s\n", "search", "trials", "share", "pick",
               "its value", "gap on the grid's numbers");
  for (const PickReport* pick : {&r.grid, &r.replay, &r.live}) {
    if (!pick->found) {
      std::fprintf(out, "%-34s %6zu %5.0f%%  no valid trial\n", pick->strategy.c_str(),
                   pick->trials, 100 * pick->share);
      continue;
    }
    char gap[32] = "n/a";
    if (pick->gap_on_grid_pct) std::snprintf(gap, sizeof gap, "%+.2f%%", *pick->gap_on_grid_pct);
    std::fprintf(out, "%-34s %6zu %5.0f%%  %-40s %10.1f  %s\n", pick->strategy.c_str(),
                 pick->trials, 100 * pick->share, pick->knobs.c_str(), pick->value, gap);
  }
  if (!r.head_to_head) {
    std::fprintf(out, "head-to-head: not run (a search found no valid point)\n");
    return;
  }
  const HeadToHead& h = *r.head_to_head;
  std::fprintf(out, "head-to-head, interleaved, %u of %u rounds ok%s, %s:\n", h.rounds_ok, h.rounds,
               h.same_point ? " (both picks are the same point: gap 0 by construction, the rounds "
                              "show the noise)"
                            : "",
               Minutes(h.seconds).c_str());
  if (h.rounds_ok == 0) return;
  auto line = [&](const char* label, const MedianEstimate& e) {
    std::fprintf(out, "  %-9s median %10.1f %s  CI [%.1f, %.1f] (%.0f%% conf)\n", label, e.median,
                 unit, e.low, e.high, 100 * e.achieved_confidence);
  };
  line("grid", h.grid);
  line("adaptive", h.adaptive);
  std::fprintf(out,
               "  gap from the medians %+.2f%%; paired per-round gap median %+.2f%% CI "
               "[%+.2f%%, %+.2f%%] (%.0f%% conf); positive = adaptive worse\n",
               h.gap_pct, h.paired_gap_pct.median, h.paired_gap_pct.low, h.paired_gap_pct.high,
               100 * h.paired_gap_pct.achieved_confidence);
  std::fprintf(out, "  target (within 5%%, <= 30%% of the grid's trials): %s, share %.0f%%\n",
               h.gap_pct <= 5 && r.live.share <= 0.3 ? "met" : "missed", 100 * r.live.share);
}

nlohmann::ordered_json LiveReportJson(const LiveReport& r) {
  nlohmann::ordered_json j = {{"fabric", r.fabric},
                              {"peer", r.peer},
                              {"objective", r.objective},
                              {"unit", r.unit},
                              {"workload", r.workload},
                              {"space", r.space},
                              {"grid_points", r.grid_points},
                              {"seconds", r.seconds},
                              {"warmup",
                               {{"passes", r.warmup.passes},
                                {"stable", r.warmup.stable},
                                {"seconds", r.warmup.seconds},
                                {"error", r.warmup.error}}},
                              {"grid", PickJson(r.grid)},
                              {"adaptive_replay", PickJson(r.replay)},
                              {"adaptive_live", PickJson(r.live)}};
  if (!r.head_to_head) {
    j["head_to_head"] = nullptr;
    return j;
  }
  const HeadToHead& h = *r.head_to_head;
  j["head_to_head"] = {{"rounds", h.rounds},
                       {"rounds_ok", h.rounds_ok},
                       {"same_point", h.same_point},
                       {"grid", EstimateJson(h.grid)},
                       {"adaptive", EstimateJson(h.adaptive)},
                       {"gap_pct", h.gap_pct},
                       {"paired_gap_pct", EstimateJson(h.paired_gap_pct)},
                       {"grid_values", h.grid_values},
                       {"adaptive_values", h.adaptive_values},
                       {"within_5pct", h.rounds_ok > 0 && h.gap_pct <= 5},
                       {"seconds", h.seconds}};
  return j;
}

}  // namespace artune::tuner::bench
