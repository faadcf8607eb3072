// `artune predict`: the time of one pass of a workload under every config of a
// search space, costed by a link model (link_model.h), without measuring anything.
//
// Each message of the workload is planned as the transport plans it
// (transport::PlanMessage: the config's own protocol choice per slice and its
// packing of eager slices), and costed:
//   message = base + sum over its units of (unit cost - base) * factor
// where a unit is an eager packet or a rendezvous transfer and `base` is the cost
// of the smallest eager call (what a call costs with nearly nothing in it): a call
// pays its round trip once, each unit what it adds. `factor` is 1 for an eager
// packet and, for a rendezvous transfer, LinkModel::SlicesFactor at the message's
// count of rendezvous transfers (several large slices of one call cost more than
// their sum). The pass is the sum over the messages (the points are per-call wall
// times at the workload's calls in flight).
//
// The terms: the pass's cost split by the log2 size bucket of each unit (a
// coalesced packet by its payload) and the per-call base. DecidingTerms compares
// the best config's terms with the default's and names the buckets that make the
// difference, merged over neighbouring buckets that changed protocol alike.
//
// Threading: pure functions over plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "artune/model/link_model.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/workload.h"

namespace artune::model {

// The per-call base term's key in PassCost::terms.
inline constexpr int kBaseTerm = -1;

struct TermCost {
  double seconds = 0;
  uint64_t units = 0;
  std::map<transport::Protocol, uint64_t> protocols;  // units per protocol
};

struct PassCost {
  double seconds = 0;
  std::map<int, TermCost> terms;  // by log2 bucket of the unit size; kBaseTerm: per call
};

// One pass of `workload` under `config`. kNotFound when the model lacks a point the
// config needs (its polling mode, a protocol).
Result<PassCost> CostPass(const LinkModel& model, const tuner::Workload& workload,
                          const transport::Config& config, double inflight);

struct ConfigPrediction {
  std::map<std::string, std::string> knobs;  // the swept knobs' values
  transport::Config config;
  PassCost cost;
};

// A bucket range where the best and the default differ.
struct DecidingTerm {
  int first_bucket = 0, last_bucket = 0;          // log2 buckets, inclusive
  std::string best_protocols, default_protocols;  // "chunked-rendezvous", "eager+rendezvous-read"
  double saving_s = 0;                            // default's cost of these units minus the best's
  double share_of_pass = 0;                       // saving_s / the default's pass
  std::string text;  // "the 512KiB-4MiB slices: chunked-rendezvous ... saves 38 % ..."
};

struct Prediction {
  std::vector<ConfigPrediction> ranked;  // every config of the space, fastest first
  ConfigPrediction default_config;       // the transport's defaults for the swept knobs
  double margin = 0;  // (default - best) / default; 0 or less: the default is as good
  std::vector<DecidingTerm> deciding;  // largest |saving| first, at most a few
  double inflight = 0;
  const ConfigPrediction& best() const { return ranked.front(); }
};

// Every config of `space` over `base` (fastest first, ties in grid order), the
// default (base with the swept knobs at the transport's defaults) and the terms
// that decided. Errors: CostPass's; kInvalidArgument for an empty workload.
Result<Prediction> Predict(const LinkModel& model, const tuner::Workload& workload,
                           const tuner::SearchSpace& space, const transport::Config& base,
                           double inflight);

// "512KiB" style label of a log2 bucket's lower bound; "per call" for kBaseTerm.
std::string BucketLabel(int bucket);

}  // namespace artune::model
