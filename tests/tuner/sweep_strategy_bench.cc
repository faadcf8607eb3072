// Benchmark: how many trials the adaptive strategy needs and how far its pick is
// from the exhaustive grid's best, on synthetic surfaces and on a live loopback
// link (the default eager_threshold x chunk_size space). Prints numbers; asserts
// nothing (figures go in bench/sweep.md).
//
//   tuner_strategy_bench [--loopback] [--objective bandwidth] [--duration 0.1]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "artune/tuner/search_space.h"
#include "artune/tuner/strategy.h"
#include "artune/tuner/trial.h"

using namespace artune;
using namespace artune::tuner;

namespace {

struct Outcome {
  size_t trials = 0;
  Point best;
  double best_cost = INFINITY;
};

Outcome RunStrategy(Strategy& strategy,
                    const std::function<std::optional<double>(const Point&)>& f) {
  Outcome outcome;
  Status status = strategy.Search([&](const Point& p) -> Result<std::optional<double>> {
    ++outcome.trials;
    std::optional<double> cost = f(p);
    if (cost && *cost < outcome.best_cost) {
      outcome.best_cost = *cost;
      outcome.best = p;
    }
    return cost;
  });
  if (!status.ok()) std::fprintf(stderr, "search failed: %s\n", status.ToString().c_str());
  return outcome;
}

// Transfer-time-like surface over (eager index, chunk index): a copy cost that grows
// past the crossover, a rendezvous overhead below it, a per-chunk cost and a
// pipelining loss for huge chunks, plus multiplicative noise.
double Surface(const Point& p, double crossover, double chunk_best, double noise,
               std::mt19937_64& rng) {
  const double e = static_cast<double>(p[0]), c = static_cast<double>(p[1]);
  double cost = 100 + 6 * std::pow(std::fabs(e - crossover), 1.5) +
                4 * (c - chunk_best) * (c - chunk_best) +
                1.5 * (e - crossover) * (c - chunk_best) / 2;
  std::normal_distribution<double> jitter(0, noise);
  return cost * (1 + jitter(rng));
}

void Synthetic() {
  std::printf("synthetic surfaces on the default 11 x 9 grid (99 points)\n");
  std::printf("%-28s %6s %9s %9s %7s\n", "surface", "grid", "adaptive", "share", "gap");
  std::mt19937_64 rng(42);
  for (double noise : {0.0, 0.02}) {
    for (auto [crossover, chunk] :
         {std::pair{2.0, 6.0}, {8.0, 2.0}, {5.0, 4.0}, {0.0, 8.0}, {10.0, 0.0}, {6.5, 5.5}}) {
      // One noisy table per surface, read by both strategies (same measurements).
      std::map<Point, double> table;
      for (size_t e = 0; e < 11; ++e) {
        for (size_t c = 0; c < 9; ++c)
          table[{e, c}] = Surface({e, c}, crossover, chunk, noise, rng);
      }
      auto lookup = [&](const Point& p) -> std::optional<double> { return table.at(p); };
      auto grid = MakeGridStrategy({11, 9});
      auto adaptive = MakeAdaptiveStrategy({11, 9}, {6, 5});  // nearest to 16KiB, 512KiB
      Outcome g = RunStrategy(*grid, lookup);
      Outcome a = RunStrategy(*adaptive, lookup);
      char name[64];
      std::snprintf(name, sizeof name, "opt (%.1f, %.1f) noise %.0f%%", crossover, chunk,
                    noise * 100);
      std::printf("%-28s %6zu %9zu %8.0f%% %6.2f%%\n", name, g.trials, a.trials,
                  100.0 * static_cast<double>(a.trials) / static_cast<double>(g.trials),
                  100.0 * (a.best_cost - g.best_cost) / g.best_cost);
    }
  }
}

int Loopback(Objective objective, double duration) {
  SearchSpace space = DefaultSearchSpace();
  TrialOptions options;
  options.objective = objective;
  options.repeats = 3;
  options.warmup_s = 0.05;
  options.duration_s = duration;
  transport::Config base;
  base.fabric = transport::FabricKind::kTcp;
  auto target = TrialTarget::Open(base, "", options);
  if (!target.ok()) {
    std::fprintf(stderr, "%s\n", target.status().ToString().c_str());
    return 1;
  }
  PayloadSpec spec;
  spec.scheme = Scheme::kSkew;
  spec.buffer_count = 10;
  auto workload = SchemeWorkload(spec);
  if (!workload.ok()) return 1;
  const bool lower = LowerIsBetter(objective);
  std::map<Point, std::optional<double>> measured;
  auto measure = [&](const Point& p) -> std::optional<double> {
    auto m = (*target)->Measure(space.Apply(p, base), *workload);
    if (!m.ok() || m->status != "ok") return std::nullopt;
    return lower ? m->objective : -m->objective;
  };
  std::printf("\nloopback tcp, %s, skew x10 buffers, %u x %.2fs per trial\n",
              std::string(ObjectiveName(objective)).c_str(), options.repeats, duration);
  auto grid = MakeGridStrategy(space.AxisSizes());
  Outcome g = RunStrategy(*grid, [&](const Point& p) {
    auto cost = measure(p);
    measured[p] = cost;
    return cost;
  });
  auto replay = MakeAdaptiveStrategy(space.AxisSizes(), space.Nearest(base));
  Outcome r = RunStrategy(*replay, [&](const Point& p) { return measured.at(p); });
  auto live = MakeAdaptiveStrategy(space.AxisSizes(), space.Nearest(base));
  Outcome l = RunStrategy(*live, measure);
  auto show = [&](const char* label, const Outcome& o) {
    if (o.best.empty()) {
      std::printf("%-34s trials %3zu  no valid trial\n", label, o.trials);
      return;
    }
    const double value = lower ? o.best_cost : -o.best_cost;
    // The gap is judged on the grid's measurement of the chosen point.
    const auto chosen = measured.count(o.best) ? measured[o.best] : std::nullopt;
    const double gap = chosen ? 100.0 * (*chosen - g.best_cost) / std::fabs(g.best_cost) : NAN;
    const std::string knobs = db::TrialKnobKey(space.KnobValues(o.best));
    std::printf("%-34s trials %3zu (%3.0f%%)  best %s  %.1f %s  gap %.2f%%\n", label, o.trials,
                100.0 * static_cast<double>(o.trials) / static_cast<double>(g.trials),
                knobs.c_str(), value, std::string(ObjectiveUnit(objective)).c_str(), gap);
  };
  show("grid", g);
  show("adaptive (on the grid's numbers)", r);
  show("adaptive (live)", l);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool loopback = false;
  Objective objective = Objective::kBandwidth;
  double duration = 0.1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--loopback") == 0) loopback = true;
    if (std::strcmp(argv[i], "--objective") == 0 && i + 1 < argc) {
      auto parsed = ParseObjective(argv[++i]);
      if (!parsed.ok()) {
        std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
        return 2;
      }
      objective = *parsed;
    }
    if (std::strcmp(argv[i], "--duration") == 0 && i + 1 < argc) duration = std::atof(argv[++i]);
  }
  Synthetic();
  return loopback ? Loopback(objective, duration) : 0;
}
