#include "artune/model/predict.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <tuple>

#include "artune/transport/knobs.h"
#include "artune/transport/protocol.h"

namespace artune::model {
namespace {

using transport::Protocol;

// Unit costs already looked up: every config of a space costs the same message
// sizes again.
using CostKey = std::tuple<Protocol, transport::PollingMode, uint64_t, uint64_t, uint32_t>;
struct CostCache {
  std::map<CostKey, double> costs;
  std::map<std::pair<CostKey, uint32_t>, double> slices_factors;  // by the call's slices
};

Result<double> CachedUnitCost(const LinkModel& model, CostCache& cache, Protocol protocol,
                              const transport::Config& config, uint64_t size, double inflight) {
  const bool chunked = protocol == Protocol::kChunkedRendezvous;
  const CostKey key{protocol, config.polling, size, chunked ? config.chunk_size : 0,
                    chunked ? config.pipeline_depth : 0};
  if (auto found = cache.costs.find(key); found != cache.costs.end()) return found->second;
  ARTUNE_ASSIGN_OR_RETURN(double cost, model.UnitCost(protocol, config.polling, size, inflight,
                                                      std::get<3>(key), std::get<4>(key)));
  cache.costs.emplace(key, cost);
  return cost;
}

double CachedSlicesFactor(const LinkModel& model, CostCache& cache, Protocol protocol,
                          const transport::Config& config, uint64_t size, uint32_t slices) {
  const bool chunked = protocol == Protocol::kChunkedRendezvous;
  const std::pair<CostKey, uint32_t> key{
      {protocol, config.polling, size, chunked ? config.chunk_size : 0,
       chunked ? config.pipeline_depth : 0},
      slices};
  if (auto found = cache.slices_factors.find(key); found != cache.slices_factors.end()) {
    return found->second;
  }
  const double factor = model.SlicesFactor(protocol, config.polling, size, slices,
                                           std::get<3>(key.first), std::get<4>(key.first));
  cache.slices_factors.emplace(key, factor);
  return factor;
}

void AddUnit(PassCost& pass, Protocol protocol, uint64_t size, double seconds) {
  TermCost& term = pass.terms[transport::Log2Bucket(size)];
  term.seconds += seconds;
  term.units += 1;
  term.protocols[protocol] += 1;
  pass.seconds += seconds;
}

Result<PassCost> CostPassCached(const LinkModel& model, CostCache& cache,
                                const tuner::Workload& workload, const transport::Config& config,
                                double inflight) {
  PassCost pass;
  ARTUNE_ASSIGN_OR_RETURN(const double base,
                          CachedUnitCost(model, cache, Protocol::kEager, config, 1, inflight));
  for (const tuner::Payload& message : workload.messages) {
    const transport::MessagePlan plan = transport::PlanMessage(message.layout().sizes, config);
    TermCost& per_call = pass.terms[kBaseTerm];
    per_call.seconds += base;
    per_call.units += 1;
    pass.seconds += base;
    // What a unit adds to the call it travels in: never less than nothing; a
    // rendezvous unit among others of its call, what it adds alone times the
    // model's factor for that many (LinkModel::SlicesFactor).
    const auto rendezvous_units = static_cast<uint32_t>(plan.rendezvous.size());
    auto add = [&](Protocol protocol, uint64_t size, uint32_t slices) -> Status {
      ARTUNE_ASSIGN_OR_RETURN(double cost,
                              CachedUnitCost(model, cache, protocol, config, size, inflight));
      const double factor = CachedSlicesFactor(model, cache, protocol, config, size, slices);
      AddUnit(pass, protocol, size, std::max(0.0, cost - base) * factor);
      return Status::Ok();
    };
    for (const transport::EagerPacket& packet : plan.eager_packets) {
      ARTUNE_RETURN_IF_ERROR(add(packet.protocol, packet.payload_bytes, 1));
    }
    for (const transport::RendezvousTransfer& transfer : plan.rendezvous) {
      ARTUNE_RETURN_IF_ERROR(add(transfer.protocol, transfer.bytes, rendezvous_units));
    }
  }
  return pass;
}

std::string ProtocolsText(const TermCost* term) {
  if (term == nullptr || term->protocols.empty()) return "none";
  std::string text;
  for (const auto& [protocol, units] : term->protocols) {
    text += (text.empty() ? "" : "+") + std::string(transport::ProtocolName(protocol));
  }
  return text;
}

std::string Percent(double share) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(share < 0.1 ? 1 : 0) << share * 100 << " %";
  return out.str();
}

// How the best config carries a protocol: "chunked-rendezvous at 1MiB, depth 4".
std::string HowCarried(const std::string& protocols, const transport::Config& config) {
  std::string text = protocols;
  if (protocols.find("chunked") != std::string::npos) {
    text += " at " + transport::FormatBytes(config.chunk_size) + " chunks, depth " +
            std::to_string(config.pipeline_depth);
  }
  return text;
}

// Neighbouring buckets whose costs differ, merged while both configs use the same
// protocols in them and the saving keeps its sign.
std::vector<DecidingTerm> Deciding(const ConfigPrediction& best, const ConfigPrediction& fallback) {
  std::vector<DecidingTerm> merged;
  std::set<int> buckets;
  for (const auto& [bucket, term] : best.cost.terms) buckets.insert(bucket);
  for (const auto& [bucket, term] : fallback.cost.terms) buckets.insert(bucket);
  const double pass = fallback.cost.seconds;
  for (int bucket : buckets) {
    auto find = [bucket](const PassCost& cost) -> const TermCost* {
      auto it = cost.terms.find(bucket);
      return it == cost.terms.end() ? nullptr : &it->second;
    };
    const TermCost* mine = find(best.cost);
    const TermCost* theirs = find(fallback.cost);
    const double saving = (theirs ? theirs->seconds : 0) - (mine ? mine->seconds : 0);
    if (pass <= 0 || std::abs(saving) < 0.005 * pass) continue;  // under half a percent
    DecidingTerm term{bucket, bucket, ProtocolsText(mine), ProtocolsText(theirs), saving, 0, ""};
    if (!merged.empty()) {
      DecidingTerm& last = merged.back();
      if (bucket != kBaseTerm && last.first_bucket != kBaseTerm && last.last_bucket + 1 == bucket &&
          last.best_protocols == term.best_protocols &&
          last.default_protocols == term.default_protocols && (last.saving_s > 0) == (saving > 0)) {
        last.last_bucket = bucket;
        last.saving_s += saving;
        continue;
      }
    }
    merged.push_back(term);
  }
  for (DecidingTerm& term : merged) {
    term.share_of_pass = pass > 0 ? term.saving_s / pass : 0;
    std::string what = term.first_bucket == kBaseTerm
                           ? "the per-call cost"
                           : "the " + BucketLabel(term.first_bucket) + "-" +
                                 transport::FormatBytes(uint64_t{2} << term.last_bucket) +
                                 " slices";
    std::string how = term.best_protocols == term.default_protocols
                          ? HowCarried(term.best_protocols, best.config) + " in both"
                          : HowCarried(term.best_protocols, best.config) + " instead of " +
                                term.default_protocols;
    term.text = what + ": " + how + (term.saving_s >= 0 ? " saves " : " costs ") +
                Percent(std::abs(term.share_of_pass)) + " of the pass";
  }
  std::sort(merged.begin(), merged.end(), [](const DecidingTerm& a, const DecidingTerm& b) {
    return std::abs(a.saving_s) > std::abs(b.saving_s);
  });
  if (merged.size() > 4) merged.resize(4);
  return merged;
}

}  // namespace

Result<PassCost> CostPass(const LinkModel& model, const tuner::Workload& workload,
                          const transport::Config& config, double inflight) {
  CostCache cache;
  return CostPassCached(model, cache, workload, config, inflight);
}

Result<Prediction> Predict(const LinkModel& model, const tuner::Workload& workload,
                           const tuner::SearchSpace& space, const transport::Config& base,
                           double inflight) {
  if (workload.messages.empty()) {
    return Status::InvalidArgument("workload " + workload.description + " has no message to cost");
  }
  Prediction prediction;
  prediction.inflight = inflight;
  CostCache cache;
  const std::vector<size_t> sizes = space.AxisSizes();
  tuner::Point point(sizes.size(), 0);
  for (size_t index = 0; index < space.GridSize(); ++index) {
    // Mixed-radix count: the last axis fastest, as the grid strategy walks it.
    size_t rest = index;
    for (size_t axis = sizes.size(); axis-- > 0;) {
      point[axis] = rest % sizes[axis];
      rest /= sizes[axis];
    }
    ConfigPrediction config{space.KnobValues(point), space.Apply(point, base), {}};
    ARTUNE_ASSIGN_OR_RETURN(config.cost,
                            CostPassCached(model, cache, workload, config.config, inflight));
    prediction.ranked.push_back(std::move(config));
  }
  std::stable_sort(prediction.ranked.begin(), prediction.ranked.end(),
                   [](const ConfigPrediction& a, const ConfigPrediction& b) {
                     return a.cost.seconds < b.cost.seconds;
                   });
  ConfigPrediction& fallback = prediction.default_config;
  fallback.config = base;
  const transport::Config defaults;
  for (const tuner::KnobAxis& axis : space.axes) {
    axis.knob->set(fallback.config, axis.knob->get(defaults));
    fallback.knobs[std::string(axis.name())] = transport::FormatKnob(defaults, axis.name());
  }
  ARTUNE_ASSIGN_OR_RETURN(fallback.cost,
                          CostPassCached(model, cache, workload, fallback.config, inflight));
  if (fallback.cost.seconds > 0) {
    prediction.margin =
        (fallback.cost.seconds - prediction.best().cost.seconds) / fallback.cost.seconds;
  }
  prediction.deciding = Deciding(prediction.best(), fallback);
  return prediction;
}

std::string BucketLabel(int bucket) {
  if (bucket == kBaseTerm) return "per call";
  return transport::FormatBytes(uint64_t{1} << bucket);
}

}  // namespace artune::model
