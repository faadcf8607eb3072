// A cluster run of link models (`artune sweep --mpi --strategy model`, measurement
// "model"): each link measured its link model (artune/model/measure.h, kept short)
// instead of a sweep, and everything else is predicted from the stored models:
//
//   per link     the best config of the search space for the run's workload
//                (model::Predict over the link's model), with its margin over the
//                default;
//   the cluster  the config with the best predicted total over every usable link
//                (the sum of the links' predicted pass times: a job that spreads
//                one pass of the workload over every link);
//   outliers     links whose model is far from the others' (ModelOutliers).
//
// The predictions are not stored: they are sums over the stored models, computed
// again in milliseconds wherever the run is read (the run's end, `artune results
// --cluster ID`, `artune apply config --cluster ID`), so all of them agree and any
// of them can be checked with `artune predict --link-model ID`.
//
// Threading: pure functions over plain values, but ReadClusterModels (the store's).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/model/link_model.h"
#include "artune/model/measure.h"
#include "artune/model/predict.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/sweep_plan.h"
#include "artune/tuner/workload.h"

namespace artune::tuner {

// The measurement word of a model cluster run (db::ClusterRecord::measurement).
inline constexpr const char* kModelMeasurement = "model";
// Seconds a link's model measurement aims at (MeasureOptions::budget_s): its
// first round always completes, refinement stops when behind this schedule.
inline constexpr double kDefaultLinkModelBudget = 10;
// The cluster parameter that keeps the budget (--resume measures alike).
inline constexpr const char* kModelBudgetParameter = "model_budget_s";

// The plan and base config a cluster run stored (its parameters: the sweep plan,
// "config.NAME" per knob of the base config) laid over `plan` and `base` (the
// verbs_* knobs name the reading host's hardware and stay as given).
// kCorruption naming the cluster for a parameter missing or unreadable.
Status RestoreClusterPlan(int64_t cluster_id, const std::map<std::string, std::string>& parameters,
                          SweepPlan& plan, transport::Config& base);

// What a link of a model run measures: over `base` (fabric, buffers), the polling
// modes the search space sweeps (else the base config's), at the workload's calls
// in flight (the pass's, model_json.h's PassInflight), within `budget_s`.
model::MeasureOptions LinkModelOptions(const SearchSpace& space, const transport::Config& base,
                                       double inflight, double budget_s);

// What the outlier rule compares between links, from one model at `polling` and
// `inflight`: the per-call cost (the smallest eager call) and the per-byte cost
// (the slope of the rendezvous read from 64 KiB to 1 MiB, so that a link whose
// calls are slow does not also look slow per byte; 0 when it does not rise).
struct LinkCosts {
  double per_call_s = 0;
  double per_byte_s = 0;
};
// kNotFound when the model lacks eager or rendezvous-read points at `polling`.
Result<LinkCosts> LinkCostsOf(const model::LinkModel& model, transport::PollingMode polling,
                              double inflight);

// A link whose model stands out. The rule, per term (per-call, per-byte): over
// the links that have costs, a link is an outlier when its cost is above the
// median by more than kOutlierDeviations scaled MADs (the scale never below
// kOutlierFloor of the median: cluster_analysis.h's rule for swept links) AND at
// least kModelOutlierRatio times the median. A model is one short measurement: on
// a loaded host it can be more than twice off (CI, 4 ranks on 2 busy cores: a
// healthy link's per-byte cost at 2.3x the median, flagged when the ratio was
// 1.5), while a link that is really wrong is far slower (a path throttled to
// 400 Mbit/s: 37-48x). Needs kOutlierMinLinks links with costs.
inline constexpr double kModelOutlierRatio = 4.0;
struct ModelOutlier {
  size_t link = 0;
  std::string term;  // "per-call" | "per-byte"
  double value = 0, median = 0;
  double deviations = 0;  // (value - median) / scale
  double ratio = 0;       // value / median
};
// `costs` per link (nullopt: the link has none, e.g. it failed); outliers in link
// order, per-call before per-byte for one link.
std::vector<ModelOutlier> ModelOutliers(const std::vector<std::optional<LinkCosts>>& costs);

// "look at the link a ↔ b: per-call cost 2.1 ms, 14.3x the median of the links
// (0.147 ms; 95.2 MAD above)".
std::string ModelOutlierSentence(const ModelOutlier& outlier, const std::string& link_hosts);

// One config's predicted total over the usable links.
struct ClusterConfigTotal {
  std::map<std::string, std::string> knobs;
  std::string key;     // db::TrialKnobKey of knobs
  double seconds = 0;  // sum of the links' predicted pass times
  double worst_s = 0;  // the slowest link's
  size_t worst_link = 0;
};

struct ClusterModelPrediction {
  // Per link of the run (nullopt: no usable model); each link's Prediction.
  std::vector<std::optional<model::Prediction>> links;
  std::vector<std::optional<LinkCosts>> costs;
  std::vector<ClusterConfigTotal> ranked;  // every config, best total first; empty: no link
  std::optional<ClusterConfigTotal> default_total;
  double margin = 0;  // (default - best) / default over the totals
  std::vector<ModelOutlier> outliers;
  double inflight = 0;
  size_t usable_links = 0;
};

// Predicts every link whose model is given and sums the configs over them.
// Errors: model::Predict's (a model lacking the polling mode a config needs).
Result<ClusterModelPrediction> PredictCluster(
    const std::vector<std::optional<model::LinkModel>>& models, const Workload& workload,
    const SearchSpace& space, const transport::Config& base, double inflight);

// A stored model run read back and predicted.
struct ClusterModelData {
  db::ClusterRecord cluster;
  std::vector<db::ClusterLinkRecord> links;  // by round, then pair
  SweepPlan plan;
  transport::Config base;
  SearchSpace space;
  std::string workload;  // "capture:12" | "scheme:uniform"
  ClusterModelPrediction prediction;
};

// Reads cluster `cluster_id` (its measurement must be "model": kInvalidArgument
// otherwise), every link's model, its workload (rank 0's capture or the scheme) and
// predicts. Errors: the store's (kNotFound), RestoreClusterPlan's, PredictCluster's.
Result<ClusterModelData> ReadClusterModels(db::Store& store, int64_t cluster_id);

// `artune results --cluster ID --json` and `sweep --mpi --json` of a model run:
// cluster, workload, search_space, inflight, usable_links, failed_links, links
// (ends, status, error, model_id, best, best_s, default_s, margin, per_call_s,
// per_byte_s, outlier), cluster_best {knobs, total_s, worst_s}, default_total,
// margin, configs (every config's total, best first), outlier_rule, outliers
// (with "message").
nlohmann::ordered_json ClusterModelJson(const ClusterModelData& data);

}  // namespace artune::tuner
