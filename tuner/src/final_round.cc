#include "artune/tuner/final_round.h"

#include <algorithm>
#include <optional>
#include <set>

#include "artune/transport/knobs.h"
#include "artune/tuner/stats.h"

namespace artune::tuner {
namespace {

constexpr uint32_t kMaxFinalists = 16;
constexpr uint32_t kMaxRounds = 16;

bool OkAndValidated(const TrialMeasurement& measurement) {
  return measurement.status == db::TrialStatus::kOk && measurement.validated;
}

double MedianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return QuantileOfSorted(values, 0.5);
}

Result<transport::Config> ConfigOf(const transport::Config& base,
                                   const std::map<std::string, std::string>& knobs) {
  transport::Config config = base;
  for (const auto& [name, value] : knobs) {
    ARTUNE_RETURN_IF_ERROR(
        transport::SetKnob(config, name, value).WithContext("finalist " + db::TrialKnobKey(knobs)));
  }
  return config;
}

}  // namespace

bool OkAndValidated(const db::TrialRecord& trial) {
  return trial.status == db::TrialStatus::kOk && trial.validated;
}

Status ValidateFinalRoundOptions(const FinalRoundOptions& options) {
  if (options.finalists == 0 || options.finalists > kMaxFinalists) {
    return Status::InvalidArgument("finalists " + std::to_string(options.finalists) +
                                   " is out of range: give 1.." + std::to_string(kMaxFinalists));
  }
  if (options.rounds == 0 || options.rounds > kMaxRounds) {
    return Status::InvalidArgument("final rounds " + std::to_string(options.rounds) +
                                   " is out of range: give 1.." + std::to_string(kMaxRounds));
  }
  return Status::Ok();
}

std::vector<db::TrialRecord> PickFinalists(const std::vector<db::TrialRecord>& trials,
                                           const std::string& default_knobs, ObjectiveGoal goal,
                                           uint32_t count) {
  std::vector<const db::TrialRecord*> candidates;
  std::set<std::string> keys;
  for (const db::TrialRecord& trial : trials) {
    if (!OkAndValidated(trial)) continue;
    const std::string key = db::TrialKnobKey(trial.knobs);
    if (key == default_knobs || !keys.insert(key).second) continue;
    candidates.push_back(&trial);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const db::TrialRecord* a, const db::TrialRecord* b) {
                     return Better(goal, a->objective, b->objective);
                   });
  std::vector<db::TrialRecord> picked;
  for (const db::TrialRecord* trial : candidates) {
    if (picked.size() == count) break;
    picked.push_back(*trial);
  }
  return picked;
}

db::TrialRecord PoolRounds(int64_t sweep_id, const std::map<std::string, std::string>& knobs,
                           const std::vector<TrialMeasurement>& rounds) {
  db::TrialRecord pooled;
  pooled.sweep_id = sweep_id;
  pooled.knobs = knobs;
  pooled.status = db::TrialStatus::kOk;
  pooled.validated = true;
  pooled.remeasured = rounds.empty() ? 0 : rounds.size() - 1;
  bool every_round_has_samples = !rounds.empty();
  std::vector<double> samples, objectives, lows, highs;
  std::map<std::string, std::vector<double>> metrics;
  for (const TrialMeasurement& round : rounds) {
    pooled.duration_s += round.duration_s;
    pooled.samples += round.samples;
    if (pooled.status == db::TrialStatus::kOk && !OkAndValidated(round)) {
      pooled.status =
          round.status == db::TrialStatus::kOk ? db::TrialStatus::kInvalid : round.status;
      pooled.error = round.error;
      pooled.validated = false;
    }
    if (round.values.empty()) every_round_has_samples = false;
    samples.insert(samples.end(), round.values.begin(), round.values.end());
    objectives.push_back(round.objective);
    lows.push_back(round.ci_low);
    highs.push_back(round.ci_high);
    for (const auto& [name, value] : round.metrics) metrics[name].push_back(value);
  }
  if (every_round_has_samples) {
    const MedianEstimate estimate = MedianWithConfidence(samples);
    pooled.objective = estimate.median;
    pooled.ci_low = estimate.low;
    pooled.ci_high = estimate.high;
  } else if (!rounds.empty()) {
    pooled.objective = MedianOf(objectives);
    pooled.ci_low = MedianOf(lows);
    pooled.ci_high = MedianOf(highs);
  }
  for (auto& [name, values] : metrics) pooled.metrics[name] = MedianOf(std::move(values));
  return pooled;
}

namespace {

// One entry of the final round: the default (entry 0) or a finalist.
struct Contender {
  std::map<std::string, std::string> knobs;
  transport::Config config;
  std::vector<TrialMeasurement> rounds;
  uint32_t rounds_won = 0;
  bool out = false;              // failed or corrupted in a round: not measured again
  std::vector<double> speedups;  // over the default of the same round
};

// Each finalist against the default of the same round (`this_round`, by contender);
// a round whose default failed is won by any finalist that did not.
void ScoreRound(const std::vector<std::optional<TrialMeasurement>>& this_round, ObjectiveGoal goal,
                std::vector<Contender>& contenders) {
  const std::optional<TrialMeasurement>& default_now = this_round[0];
  const bool default_ok = default_now && OkAndValidated(*default_now);
  for (size_t i = 1; i < contenders.size(); ++i) {
    if (!this_round[i] || !OkAndValidated(*this_round[i])) continue;
    if (!default_ok || Better(goal, this_round[i]->objective, default_now->objective)) {
      ++contenders[i].rounds_won;
    }
    if (!default_ok) continue;
    const std::vector<double>& mine = this_round[i]->values;
    const std::vector<double>& theirs = default_now->values;
    for (size_t k = 0; k < mine.size() && k < theirs.size(); ++k) {
      if (!(mine[k] > 0 && theirs[k] > 0)) continue;
      contenders[i].speedups.push_back(goal == ObjectiveGoal::kMin ? theirs[k] / mine[k]
                                                                   : mine[k] / theirs[k]);
    }
  }
}

// Ranked by the median of their pairs with the default when every valid finalist
// has enough (drift cancels within a pair, not across a pooled median), else all
// by pooled objective: one key for all keeps the order a strict weak ordering.
void RankFinalists(ObjectiveGoal goal, FinalRoundResult& result) {
  std::map<std::string, double> paired_median;
  bool by_pairs = true;
  for (const db::FinalistRecord& finalist : result.finalists) {
    if (!tuner::OkAndValidated(finalist.pooled)) continue;
    const std::string key = db::TrialKnobKey(finalist.pooled.knobs);
    const std::vector<double>& pairs = result.paired_speedups.at(key);
    if (pairs.size() < kMinPairsForVerdict) by_pairs = false;
    paired_median[key] = MedianWithConfidence(pairs).median;
  }
  std::stable_sort(result.finalists.begin(), result.finalists.end(),
                   [&](const db::FinalistRecord& a, const db::FinalistRecord& b) {
                     const bool a_ok = tuner::OkAndValidated(a.pooled);
                     const bool b_ok = tuner::OkAndValidated(b.pooled);
                     if (a_ok != b_ok) return a_ok;
                     if (!a_ok) return false;
                     if (by_pairs) {
                       return paired_median.at(db::TrialKnobKey(a.pooled.knobs)) >
                              paired_median.at(db::TrialKnobKey(b.pooled.knobs));
                     }
                     return Better(goal, a.pooled.objective, b.pooled.objective);
                   });
}

}  // namespace

Result<FinalRoundResult> RunFinalRound(TrialTarget& target, const Workload& workload,
                                       const transport::Config& base, int64_t sweep_id,
                                       const std::map<std::string, std::string>& default_knobs,
                                       const std::vector<db::TrialRecord>& finalists,
                                       ObjectiveGoal goal, const FinalRoundOptions& options,
                                       const FinalRoundProgressFn& progress) {
  ARTUNE_RETURN_IF_ERROR(ValidateFinalRoundOptions(options));
  if (finalists.empty()) {
    return Status::InvalidArgument("a final round needs at least one finalist besides the default");
  }
  // Entry 0 is the default; then the finalists in the order given.
  std::vector<Contender> contenders;
  contenders.push_back({default_knobs, base, {}, 0, false, {}});
  for (const db::TrialRecord& finalist : finalists) {
    ARTUNE_ASSIGN_OR_RETURN(transport::Config config, ConfigOf(base, finalist.knobs));
    contenders.push_back({finalist.knobs, config, {}, 0, false, {}});
  }

  const size_t total = contenders.size() * options.rounds;
  size_t done = 0;
  for (uint32_t round = 0; round < options.rounds; ++round) {
    std::vector<size_t> order(contenders.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    std::vector<std::optional<TrialMeasurement>> this_round(contenders.size());
    for (size_t index : order) {
      Contender& contender = contenders[index];
      ++done;
      if (contender.out) continue;
      if (progress) progress(done, total, db::TrialKnobKey(contender.knobs));
      ARTUNE_ASSIGN_OR_RETURN(TrialMeasurement measured,
                              target.Measure(contender.config, workload));
      if (!OkAndValidated(measured) && index != 0) contender.out = true;
      this_round[index] = measured;
      contender.rounds.push_back(std::move(measured));
    }
    ScoreRound(this_round, goal, contenders);
  }

  FinalRoundResult result;
  result.rounds = options.rounds;
  result.default_pooled = PoolRounds(sweep_id, default_knobs, contenders[0].rounds);
  for (size_t i = 1; i < contenders.size(); ++i) {
    db::FinalistRecord finalist;
    finalist.pooled = PoolRounds(sweep_id, contenders[i].knobs, contenders[i].rounds);
    finalist.rounds_won = contenders[i].rounds_won;
    result.paired_speedups[db::TrialKnobKey(contenders[i].knobs)] = contenders[i].speedups;
    result.finalists.push_back(std::move(finalist));
  }
  RankFinalists(goal, result);
  return result;
}

}  // namespace artune::tuner
