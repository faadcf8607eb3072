// Benchmark: how many trials the adaptive strategy needs and how far its pick is
// from the exhaustive grid's best, on synthetic surfaces and (--live) over a real
// link: loopback servers in this process, or `artune serve` at --peer, tcp or
// verbs. Prints numbers; asserts nothing (figures go in bench/sweep.md).
//
// The live judgement is a head-to-head re-measurement of the two picks,
// interleaved (strategy_bench_live.h says why the grid's own numbers are not a
// fair judge).
//
//   tuner_strategy_bench                        synthetic surfaces only
//   tuner_strategy_bench --live [--fabric tcp] [--scheme skew --buffers 10]
//       [--repeats 3 --duration 0.1 --warmup 0.05] [--rounds 10]
//   tuner_strategy_bench --live --fabric verbs --peer HOST:PORT
//       --set verbs_qp_timeout=17 --scheme uniform --classes S,M,L --buffers 3
//   --json: one JSON object on stdout (progress and tables go to stderr).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "artune/transport/knobs.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/strategy.h"
#include "artune/tuner/trial.h"
#include "strategy_bench_live.h"

using namespace artune;
using namespace artune::tuner;
using nlohmann::ordered_json;

namespace {

struct Outcome {
  size_t trials = 0;
  double best_cost = INFINITY;
};

Outcome RunStrategy(Strategy& strategy, const std::function<double(const Point&)>& cost_of) {
  Outcome outcome;
  Status status = strategy.Search([&](const Point& p) -> Result<std::optional<double>> {
    ++outcome.trials;
    const double cost = cost_of(p);
    outcome.best_cost = std::min(outcome.best_cost, cost);
    return std::optional<double>(cost);
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

ordered_json Synthetic(std::FILE* out) {
  std::fprintf(out, "synthetic surfaces on the default 11 x 9 grid (99 points)\n");
  std::fprintf(out, "%-28s %6s %9s %9s %7s\n", "surface", "grid", "adaptive", "share", "gap");
  ordered_json rows = ordered_json::array();
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
      auto lookup = [&](const Point& p) { return table.at(p); };
      auto grid = MakeGridStrategy({11, 9});
      auto adaptive = MakeAdaptiveStrategy({11, 9}, {6, 5});  // nearest to 16KiB, 512KiB
      Outcome g = RunStrategy(*grid, lookup);
      Outcome a = RunStrategy(*adaptive, lookup);
      const double share = static_cast<double>(a.trials) / static_cast<double>(g.trials);
      const double gap = 100.0 * (a.best_cost - g.best_cost) / g.best_cost;
      char name[64];
      std::snprintf(name, sizeof name, "opt (%.1f, %.1f) noise %.0f%%", crossover, chunk,
                    noise * 100);
      std::fprintf(out, "%-28s %6zu %9zu %8.0f%% %6.2f%%\n", name, g.trials, a.trials, 100 * share,
                   gap);
      rows.push_back({{"optimum", {crossover, chunk}},
                      {"noise", noise},
                      {"grid_trials", g.trials},
                      {"adaptive_trials", a.trials},
                      {"share", share},
                      {"gap_pct", gap}});
    }
  }
  return rows;
}

struct Flags {
  bool live = false, loopback = false, json = false;
  std::string fabric = "tcp", peer, objective = "bandwidth";
  std::string scheme = "skew", classes, skew;
  uint32_t buffers = 10;
  uint64_t small_bytes = 10, medium_bytes = 10 * 1024, large_bytes = 1024 * 1024;
  uint32_t repeats = 3, rounds = 10, inflight = 8;
  double duration = 0.1, warmup = 0.05;
  std::vector<std::string> sets, axes;
};

// The LiveOptions the flags describe; kInvalidArgument naming the bad flag.
Result<bench::LiveOptions> LiveOptionsOf(const Flags& flags) {
  bench::LiveOptions options;
  ARTUNE_RETURN_IF_ERROR(transport::SetKnob(options.base, "fabric", flags.fabric));
  for (const std::string& set : flags.sets) {
    const size_t equals = set.find('=');
    if (equals == std::string::npos) {
      return Status::InvalidArgument("--set \"" + set + "\" is not knob=value");
    }
    ARTUNE_RETURN_IF_ERROR(
        transport::SetKnob(options.base, set.substr(0, equals), set.substr(equals + 1)));
  }
  options.peer = flags.peer;
  ARTUNE_ASSIGN_OR_RETURN(options.trial.objective, ParseObjective(flags.objective));
  options.trial.repeats = flags.repeats;
  options.trial.duration_s = flags.duration;
  options.trial.warmup_s = flags.warmup;
  options.trial.inflight = flags.inflight;
  ARTUNE_RETURN_IF_ERROR(ValidateTrialOptions(options.trial));
  if (flags.rounds == 0) return Status::InvalidArgument("--rounds 0: the head-to-head needs one");
  options.rounds = flags.rounds;
  ARTUNE_ASSIGN_OR_RETURN(options.space, ParseSearchSpace(flags.axes));

  PayloadSpec spec;
  ARTUNE_ASSIGN_OR_RETURN(spec.scheme, ParseScheme(flags.scheme));
  const std::string classes = !flags.classes.empty()            ? flags.classes
                              : spec.scheme == Scheme::kUniform ? "S,M"
                                                                : "S,M,L";
  ARTUNE_ASSIGN_OR_RETURN(spec.classes, ParseClasses(classes));
  if (!flags.skew.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(spec.skew, ParseSkewWeights(flags.skew));
  }
  spec.buffer_count = flags.buffers;
  spec.class_bytes = {flags.small_bytes, flags.medium_bytes, flags.large_bytes};
  ARTUNE_ASSIGN_OR_RETURN(options.workload, SchemeWorkload(spec));
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{
      "Adaptive vs grid search: trials used and the gap to the grid's best, on synthetic "
      "surfaces and (--live) over a real link, judged by an interleaved head-to-head "
      "re-measurement of the two picks. Prints numbers; asserts nothing."};
  // A later value overrides an earlier one, so wrappers (tests/lab/strategy-bench) can
  // pass defaults and let the caller's options win.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("--live", flags.live, "Also run both searches live over a link");
  app.add_flag("--loopback", flags.loopback, "Same as --live (older spelling)");
  app.add_flag("--json", flags.json, "One JSON object on stdout; tables and progress on stderr");
  app.add_option("--fabric", flags.fabric, "tcp | verbs")
      ->check(CLI::IsMember({"tcp", "verbs"}))
      ->capture_default_str();
  app.add_option("--peer", flags.peer,
                 "host:port of a running `artune serve` (default: loopback servers in-process)");
  app.add_option("--objective", flags.objective, "What to optimise")
      ->check(CLI::IsMember(
          {"latency-p50", "latency-p99", "bandwidth", "ps-throughput", "workload-time"}))
      ->capture_default_str();
  app.add_option("--scheme", flags.scheme, "TF-gRPC-Bench payload scheme")
      ->check(CLI::IsMember({"uniform", "random", "skew"}))
      ->capture_default_str();
  app.add_option("--classes", flags.classes,
                 "Buffer classes, e.g. S,M,L (default S,M for "
                 "uniform, S,M,L otherwise)");
  app.add_option("--skew", flags.skew, "skew weights: large|medium|small or S,M,L percentages");
  app.add_option("--buffers", flags.buffers, "Buffers per message")->capture_default_str();
  app.add_option("--small-bytes", flags.small_bytes, "Small buffer size")->capture_default_str();
  app.add_option("--medium-bytes", flags.medium_bytes, "Medium buffer size")->capture_default_str();
  app.add_option("--large-bytes", flags.large_bytes, "Large buffer size")->capture_default_str();
  app.add_option("--repeats", flags.repeats, "Measurements per trial")->capture_default_str();
  app.add_option("--duration", flags.duration, "Seconds per measurement")->capture_default_str();
  app.add_option("--warmup", flags.warmup, "Seconds of warm-up per trial")->capture_default_str();
  app.add_option("--inflight", flags.inflight, "Calls in flight (bandwidth, ps)")
      ->capture_default_str();
  app.add_option("--rounds", flags.rounds, "Head-to-head rounds (each measures both picks)")
      ->capture_default_str();
  app.add_option("--set", flags.sets,
                 "Base knob KNOB=VALUE for both ends' start config "
                 "(repeatable), e.g. verbs_qp_timeout=17")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--knob", flags.axes,
                 "A search axis as for `artune sweep --knob` (default: the 11 x 9 "
                 "eager_threshold x chunk_size space)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  CLI11_PARSE(app, argc, argv);
  flags.live = flags.live || flags.loopback;

  std::FILE* text = flags.json ? stderr : stdout;
  ordered_json result;
  result["synthetic"] = Synthetic(text);
  if (flags.live) {
    Result<bench::LiveOptions> options = LiveOptionsOf(flags);
    if (!options.ok()) {
      std::fprintf(stderr, "tuner_strategy_bench: %s\n", options.status().ToString().c_str());
      return 2;
    }
    std::fprintf(stderr,
                 "live: %s, peer %s, %s, %u x %.2f s per trial (+%.2f s warm-up), %u "
                 "head-to-head rounds\n",
                 flags.fabric.c_str(), flags.peer.empty() ? "loopback" : flags.peer.c_str(),
                 options->workload.description.c_str(), flags.repeats, flags.duration, flags.warmup,
                 flags.rounds);
    Result<bench::LiveReport> report = bench::RunLive(*options, stderr);
    if (!report.ok()) {
      std::fprintf(stderr, "tuner_strategy_bench: %s\n", report.status().ToString().c_str());
      return 1;
    }
    bench::PrintLiveReport(*report, text);
    result["live"] = bench::LiveReportJson(*report);
    result["live"]["options"] = {{"repeats", flags.repeats}, {"duration_s", flags.duration},
                                 {"warmup_s", flags.warmup}, {"inflight", flags.inflight},
                                 {"rounds", flags.rounds},   {"sets", flags.sets},
                                 {"buffers", flags.buffers}};
  }
  if (flags.json) std::printf("%s\n", result.dump(2).c_str());
  return 0;
}
