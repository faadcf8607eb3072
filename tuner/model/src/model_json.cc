#include "artune/model/model_json.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "artune/transport/knobs.h"
#include "artune/transport/protocol.h"

namespace artune::model {
namespace {

using nlohmann::ordered_json;

ordered_json PointJson(const db::LinkModelPointRow& point) {
  return {{"protocol", point.protocol},
          {"polling", point.polling},
          {"chunk_size", point.chunk_size},
          {"pipeline_depth", point.pipeline_depth},
          {"size", point.size},
          {"inflight", point.inflight},
          {"median_s", point.median_s},
          {"low_s", point.low_s},
          {"high_s", point.high_s},
          {"rounds", point.rounds},
          {"slices", point.slices}};
}

ordered_json TermsJson(const PassCost& cost) {
  ordered_json terms = ordered_json::array();
  for (const auto& [bucket, term] : cost.terms) {
    ordered_json protocols = ordered_json::object();
    for (const auto& [protocol, units] : term.protocols) {
      protocols[std::string(transport::ProtocolName(protocol))] = units;
    }
    terms.push_back({{"bucket", BucketLabel(bucket)},
                     {"seconds", term.seconds},
                     {"units", term.units},
                     {"protocols", protocols}});
  }
  return terms;
}

}  // namespace

ordered_json LinkModelJson(const db::LinkModelRecord& model, bool with_points) {
  ordered_json out = {{"id", model.id},
                      {"created_at", model.created_at},
                      {"host", model.host},
                      {"peer", model.peer},
                      {"fabric", model.fabric},
                      {"rounds", model.rounds},
                      {"duration_s", model.duration_s},
                      {"points", model.points.size()}};
  if (with_points) {
    out["points"] = ordered_json::array();
    for (const auto& point : model.points) out["points"].push_back(PointJson(point));
  }
  return out;
}

ordered_json MeasuredLinkModelJson(const db::LinkModelRecord& record, const MeasureReport& report,
                                   bool stored) {
  ordered_json out = LinkModelJson(record, true);
  out["stored"] = stored;
  out["median_spread"] = report.median_spread;
  out["worst_spread"] = report.worst_spread;
  out["worst_point"] = report.worst_point;
  out["unstable_points"] = report.unstable_points;
  if (!report.busy_polling_skipped.empty())
    out["busy_polling_skipped"] = report.busy_polling_skipped;
  return out;
}

double PassInflight(const tuner::SweepPlan& plan, const tuner::Workload& workload) {
  uint32_t inflight = plan.inflight;
  if (inflight == 0) {
    inflight = workload.captured_inflight > 0
                   ? std::min(workload.captured_inflight, tuner::kMaxCapturedInflight)
                   : tuner::kDefaultSweepInflight;
  }
  return static_cast<double>(
      std::min<uint64_t>(inflight, std::max<size_t>(1, workload.messages.size())));
}

db::PredictionRecord PredictionRecordOf(const Prediction& prediction,
                                        const db::LinkModelRecord& model,
                                        const tuner::Workload& workload,
                                        const tuner::SearchSpace& space) {
  db::PredictionRecord record;
  record.model_id = model.id;
  record.workload = workload.description;
  record.search_space = space.Canonical();
  record.inflight = prediction.inflight;
  record.configs = static_cast<uint32_t>(prediction.ranked.size());
  record.best_knobs = db::TrialKnobKey(prediction.best().knobs);
  record.best_s = prediction.best().cost.seconds;
  record.default_knobs = db::TrialKnobKey(prediction.default_config.knobs);
  record.default_s = prediction.default_config.cost.seconds;
  for (const DecidingTerm& term : prediction.deciding) {
    record.summary += (record.summary.empty() ? "" : "\n") + term.text;
  }
  record.config = transport::ConfigToMap(prediction.best().config);
  return record;
}

ordered_json PredictionJson(const db::PredictionRecord& record, const Prediction& prediction,
                            bool stored, double compute_s) {
  ordered_json out;
  out["prediction_id"] = stored ? ordered_json(record.id) : ordered_json(nullptr);
  out["stored"] = stored;
  out["link_model_id"] = record.model_id;
  out["workload"] = record.workload;
  out["search_space"] = record.search_space;
  out["inflight"] = record.inflight;
  out["compute_s"] = compute_s;
  out["best"] = {{"knobs", prediction.best().knobs},
                 {"predicted_s", record.best_s},
                 {"terms", TermsJson(prediction.best().cost)}};
  out["default"] = {{"knobs", prediction.default_config.knobs},
                    {"predicted_s", record.default_s},
                    {"terms", TermsJson(prediction.default_config.cost)}};
  out["margin"] = prediction.margin;
  out["deciding"] = ordered_json::array();
  for (const DecidingTerm& term : prediction.deciding) {
    out["deciding"].push_back({{"from", BucketLabel(term.first_bucket)},
                               {"best_protocols", term.best_protocols},
                               {"default_protocols", term.default_protocols},
                               {"saving_s", term.saving_s},
                               {"share_of_pass", term.share_of_pass},
                               {"text", term.text}});
  }
  out["configs"] = ordered_json::array();
  for (const ConfigPrediction& config : prediction.ranked) {
    out["configs"].push_back({{"knobs", config.knobs}, {"predicted_s", config.cost.seconds}});
  }
  return out;
}

}  // namespace artune::model
