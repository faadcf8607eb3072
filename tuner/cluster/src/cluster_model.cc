#include "artune/cluster/cluster_model.h"

#include <algorithm>
#include <cmath>

#include "artune/base/number_text.h"
#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_summary.h"
#include "artune/model/model_json.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/stats.h"

namespace artune::tuner {
namespace {

using nlohmann::ordered_json;

constexpr const char* kConfigPrefix = "config.";
// The per-byte term is the slope of the rendezvous read between these sizes: what
// the bytes cost without the call's fixed cost (a delayed link's calls must not
// look like slow bytes), over sizes where the bytes dominate on any fabric.
constexpr uint64_t kPerByteFrom = 64 << 10;
constexpr uint64_t kPerByteTo = 1 << 20;

// The polling modes a link model needs for `space` over `base`.
std::vector<transport::PollingMode> PollingsFor(const SearchSpace& space,
                                                const transport::Config& base) {
  const int axis = space.AxisIndex("polling");
  if (axis < 0) return {base.polling};
  std::vector<transport::PollingMode> pollings;
  const KnobAxis& polling = space.axes[static_cast<size_t>(axis)];
  for (size_t i = 0; i < polling.values.size(); ++i) {
    Result<transport::PollingMode> mode = model::ParsePolling(polling.ValueText(i));
    if (mode.ok()) pollings.push_back(*mode);
  }
  return pollings.empty() ? std::vector<transport::PollingMode>{base.polling} : pollings;
}

// The outliers of one term over the links that have it.
void TermOutliers(const std::vector<std::pair<size_t, double>>& values, const std::string& term,
                  std::vector<ModelOutlier>& outliers) {
  if (values.size() < kOutlierMinLinks) return;
  std::vector<double> plain;
  for (const auto& [link, value] : values) plain.push_back(value);
  const auto [median, scale] = OutlierScaleOf(std::move(plain));
  if (!(scale > 0) || !(median > 0)) return;
  for (const auto& [link, value] : values) {
    const double away = (value - median) / scale;
    const double ratio = value / median;
    if (away > kOutlierDeviations && ratio >= kModelOutlierRatio) {
      outliers.push_back({link, term, value, median, away, ratio});
    }
  }
}

std::string Millis(double seconds) { return FormatNumber(seconds * 1e3, 3) + " ms"; }

// Seconds per byte as the time of a MiB, which reads.
std::string PerMiB(double seconds_per_byte) {
  return FormatNumber(seconds_per_byte * 1048576 * 1e3, 3) + " ms per MiB";
}

std::string TermValue(const std::string& term, double value) {
  return term == "per-byte" ? PerMiB(value) : Millis(value);
}

ordered_json OptionalNumber(const std::optional<double>& value) {
  return value ? ordered_json(*value) : ordered_json();
}

ordered_json TotalJson(const ClusterModelData& data, const ClusterConfigTotal& total) {
  const db::ClusterLinkRecord& worst = data.links[total.worst_link];
  return {{"knobs", total.key},
          {"total_s", total.seconds},
          {"worst_s", total.worst_s},
          {"worst_link",
           {{"client_host", worst.client_host},
            {"server_host", worst.server_host},
            {"round", worst.round},
            {"pair", worst.pair}}}};
}

ordered_json LinkJson(const ClusterModelData& data, size_t i) {
  const db::ClusterLinkRecord& link = data.links[i];
  const std::optional<model::Prediction>& prediction = data.prediction.links[i];
  const std::optional<LinkCosts>& costs = data.prediction.costs[i];
  bool outlier = false;
  for (const ModelOutlier& o : data.prediction.outliers) outlier = outlier || o.link == i;
  ordered_json j = LinkEndsJson(link);
  j["model_id"] = link.model_id == 0 ? ordered_json() : ordered_json(link.model_id);
  j["best"] =
      prediction ? ordered_json(db::TrialKnobKey(prediction->best().knobs)) : ordered_json();
  j["best_s"] = prediction ? ordered_json(prediction->best().cost.seconds) : ordered_json();
  j["default_s"] =
      prediction ? ordered_json(prediction->default_config.cost.seconds) : ordered_json();
  j["margin"] = prediction ? ordered_json(prediction->margin) : ordered_json();
  j["per_call_s"] = OptionalNumber(costs ? std::optional(costs->per_call_s) : std::nullopt);
  j["per_byte_s"] = OptionalNumber(costs ? std::optional(costs->per_byte_s) : std::nullopt);
  j["outlier"] = outlier;
  return j;
}

}  // namespace

Status RestoreClusterPlan(int64_t cluster_id, const std::map<std::string, std::string>& parameters,
                          SweepPlan& plan, transport::Config& base) {
  db::SweepRecord as_sweep;
  as_sweep.id = cluster_id;
  as_sweep.parameters = parameters;
  as_sweep.peer = "loopback";
  for (auto [field, name] : {std::pair{&as_sweep.objective, "objective"},
                             {&as_sweep.strategy, "strategy"},
                             {&as_sweep.search_space, "search_space"},
                             {&as_sweep.workload, "workload"}}) {
    auto it = parameters.find(name);
    if (it == parameters.end()) {
      return Status::Corruption("cluster run " + std::to_string(cluster_id) + " has no stored " +
                                name + ": it cannot be resumed; start a new run");
    }
    *field = it->second;
  }
  ARTUNE_RETURN_IF_ERROR(
      RestoreSweepPlan(as_sweep, plan).WithContext("cluster run " + std::to_string(cluster_id)));
  for (const auto& [key, value] : parameters) {
    if (!key.starts_with(kConfigPrefix)) continue;
    const std::string name = key.substr(std::string_view(kConfigPrefix).size());
    if (name.starts_with("verbs_") || transport::FindKnob(name) == nullptr) continue;
    ARTUNE_RETURN_IF_ERROR(
        transport::SetKnob(base, name, value)
            .WithContext("stored base config of cluster run " + std::to_string(cluster_id)));
  }
  return Status::Ok();
}

model::MeasureOptions LinkModelOptions(const SearchSpace& space, const transport::Config& base,
                                       double inflight, double budget_s) {
  model::MeasureOptions options;
  options.base = base;
  options.pollings = PollingsFor(space, base);
  options.inflights = {static_cast<uint32_t>(std::max(1.0, std::round(inflight)))};
  options.budget_s = budget_s;
  return options;
}

Result<LinkCosts> LinkCostsOf(const model::LinkModel& model, transport::PollingMode polling,
                              double inflight) {
  LinkCosts costs;
  uint64_t smallest = 0;
  for (const model::ModelPoint& point : model.points) {
    if (point.protocol == transport::Protocol::kEager && point.polling == polling &&
        (smallest == 0 || point.size < smallest)) {
      smallest = point.size;
    }
  }
  if (smallest == 0) {
    return Status::NotFound("link model " + std::to_string(model.id) + " has no eager point at " +
                            model::PollingName(polling) + " polling");
  }
  ARTUNE_ASSIGN_OR_RETURN(costs.per_call_s,
                          model.UnitCost(transport::Protocol::kEager, polling, smallest, inflight));
  ARTUNE_ASSIGN_OR_RETURN(const double small, model.UnitCost(transport::Protocol::kRendezvousRead,
                                                             polling, kPerByteFrom, inflight));
  ARTUNE_ASSIGN_OR_RETURN(const double large, model.UnitCost(transport::Protocol::kRendezvousRead,
                                                             polling, kPerByteTo, inflight));
  costs.per_byte_s = std::max(0.0, large - small) / static_cast<double>(kPerByteTo - kPerByteFrom);
  return costs;
}

std::vector<ModelOutlier> ModelOutliers(const std::vector<std::optional<LinkCosts>>& costs) {
  std::vector<std::pair<size_t, double>> per_call, per_byte;
  for (size_t i = 0; i < costs.size(); ++i) {
    if (!costs[i]) continue;
    per_call.push_back({i, costs[i]->per_call_s});
    per_byte.push_back({i, costs[i]->per_byte_s});
  }
  std::vector<ModelOutlier> outliers;
  TermOutliers(per_call, "per-call", outliers);
  TermOutliers(per_byte, "per-byte", outliers);
  std::stable_sort(outliers.begin(), outliers.end(),
                   [](const ModelOutlier& a, const ModelOutlier& b) { return a.link < b.link; });
  return outliers;
}

std::string ModelOutlierSentence(const ModelOutlier& outlier, const std::string& link_hosts) {
  return "look at the link " + link_hosts + ": " + outlier.term + " cost " +
         TermValue(outlier.term, outlier.value) + ", " + FormatNumber(outlier.ratio, 1) +
         "x the median of the links (" + TermValue(outlier.term, outlier.median) + "; " +
         FormatDeviations(outlier.deviations) + " MAD above)";
}

Result<ClusterModelPrediction> PredictCluster(
    const std::vector<std::optional<model::LinkModel>>& models, const Workload& workload,
    const SearchSpace& space, const transport::Config& base, double inflight) {
  ClusterModelPrediction out;
  out.inflight = inflight;
  std::map<std::string, ClusterConfigTotal> totals;  // by key
  std::vector<std::string> grid_order;               // keys in the first link's rank order
  std::optional<ClusterConfigTotal> default_total;
  for (size_t i = 0; i < models.size(); ++i) {
    out.links.emplace_back();
    out.costs.emplace_back();
    if (!models[i]) continue;
    ARTUNE_ASSIGN_OR_RETURN(model::Prediction prediction,
                            model::Predict(*models[i], workload, space, base, inflight));
    Result<LinkCosts> costs = LinkCostsOf(*models[i], base.polling, inflight);
    if (costs.ok()) out.costs.back() = *costs;
    auto add = [i](ClusterConfigTotal& total, const model::ConfigPrediction& config) {
      total.seconds += config.cost.seconds;
      if (config.cost.seconds >= total.worst_s) {
        total.worst_s = config.cost.seconds;
        total.worst_link = i;
      }
    };
    for (const model::ConfigPrediction& config : prediction.ranked) {
      const std::string key = db::TrialKnobKey(config.knobs);
      auto [it, inserted] = totals.try_emplace(key);
      if (inserted) {
        it->second.knobs = config.knobs;
        it->second.key = key;
        grid_order.push_back(key);
      }
      add(it->second, config);
    }
    if (!default_total) {
      default_total.emplace();
      default_total->knobs = prediction.default_config.knobs;
      default_total->key = db::TrialKnobKey(prediction.default_config.knobs);
    }
    add(*default_total, prediction.default_config);
    ++out.usable_links;
    out.links.back() = std::move(prediction);
  }
  for (const std::string& key : grid_order) out.ranked.push_back(totals.at(key));
  // Fastest total first; ties keep the order the first link ranked them in.
  std::stable_sort(out.ranked.begin(), out.ranked.end(),
                   [](const ClusterConfigTotal& a, const ClusterConfigTotal& b) {
                     return a.seconds < b.seconds;
                   });
  out.default_total = std::move(default_total);
  if (!out.ranked.empty() && out.default_total && out.default_total->seconds > 0) {
    out.margin =
        (out.default_total->seconds - out.ranked.front().seconds) / out.default_total->seconds;
  }
  out.outliers = ModelOutliers(out.costs);
  return out;
}

Result<ClusterModelData> ReadClusterModels(db::Store& store, int64_t cluster_id) {
  ClusterModelData data;
  ARTUNE_ASSIGN_OR_RETURN(data.cluster, store.GetCluster(cluster_id));
  if (data.cluster.measurement != kModelMeasurement) {
    return Status::InvalidArgument("cluster run " + std::to_string(cluster_id) + " measured " +
                                   data.cluster.measurement + ", not link models");
  }
  ARTUNE_ASSIGN_OR_RETURN(data.links, store.ListClusterLinks(cluster_id));
  ARTUNE_RETURN_IF_ERROR(
      RestoreClusterPlan(cluster_id, data.cluster.parameters, data.plan, data.base));
  data.workload = data.cluster.parameters.at("workload");
  ARTUNE_ASSIGN_OR_RETURN(data.space, ParseSearchSpace(data.plan.axes));
  ARTUNE_ASSIGN_OR_RETURN(const Workload workload, WorkloadOf(data.plan, store));
  std::vector<std::optional<model::LinkModel>> models;
  for (const db::ClusterLinkRecord& link : data.links) {
    models.emplace_back();
    if (link.status != db::LinkStatus::kOk || link.model_id == 0) continue;
    ARTUNE_ASSIGN_OR_RETURN(const db::LinkModelRecord record, store.GetLinkModel(link.model_id));
    ARTUNE_ASSIGN_OR_RETURN(models.back(), model::FromRecord(record));
  }
  ARTUNE_ASSIGN_OR_RETURN(data.prediction,
                          PredictCluster(models, workload, data.space, data.base,
                                         model::PassInflight(data.plan, workload)));
  return data;
}

ordered_json ClusterModelJson(const ClusterModelData& data) {
  const ClusterModelPrediction& prediction = data.prediction;
  ordered_json j;
  j["cluster"] = ClusterRecordJson(data.cluster);
  j["workload"] = data.workload;
  j["search_space"] = data.space.Canonical();
  j["inflight"] = prediction.inflight;
  j["usable_links"] = prediction.usable_links;
  j["failed_links"] = data.links.size() - prediction.usable_links;
  j["links"] = ordered_json::array();
  for (size_t i = 0; i < data.links.size(); ++i) j["links"].push_back(LinkJson(data, i));
  j["cluster_best"] =
      prediction.ranked.empty() ? ordered_json() : TotalJson(data, prediction.ranked.front());
  j["default_total"] =
      prediction.default_total ? TotalJson(data, *prediction.default_total) : ordered_json();
  j["margin"] = prediction.margin;
  j["configs"] = ordered_json::array();
  for (const ClusterConfigTotal& total : prediction.ranked) {
    j["configs"].push_back({{"knobs", total.key}, {"total_s", total.seconds}});
  }
  j["outlier_rule"] = "per-call or per-byte cost above the links' median by more than " +
                      FormatNumber(kOutlierDeviations, 0) + " scaled MAD and at least " +
                      FormatNumber(kModelOutlierRatio, 1) + "x the median";
  j["outliers"] = ordered_json::array();
  for (const ModelOutlier& outlier : prediction.outliers) {
    j["outliers"].push_back(
        {{"link", outlier.link},
         {"client_host", data.links[outlier.link].client_host},
         {"server_host", data.links[outlier.link].server_host},
         {"term", outlier.term},
         {"value", outlier.value},
         {"median", outlier.median},
         {"deviations", outlier.deviations},
         {"ratio", outlier.ratio},
         {"message", ModelOutlierSentence(outlier, LinkHosts(data.links[outlier.link]))}});
  }
  return j;
}

}  // namespace artune::tuner
