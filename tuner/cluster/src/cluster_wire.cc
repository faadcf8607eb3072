#include "artune/cluster/cluster_wire.h"

#include <exception>
#include <nlohmann/json.hpp>

#include "artune/db/record_json.h"

namespace artune::cluster {
namespace {

using nlohmann::json;

json TrialToJson(const db::TrialRecord& trial) {
  json j;
  db::AddTrialJson(j, trial);
  j["started_at"] = trial.started_at;
  j["config"] = trial.config;
  return j;
}

// Throws nlohmann's exceptions on a malformed document; DecodeLinkReport catches.
db::TrialRecord TrialFromJson(const json& j) {
  db::TrialRecord trial;
  trial.knobs = j.at("knobs").get<std::map<std::string, std::string>>();
  const std::string status = j.at("status").get<std::string>();
  const std::optional<db::TrialStatus> parsed = db::ParseTrialStatus(status);
  if (!parsed) throw std::invalid_argument("unknown trial status " + status);
  trial.status = *parsed;
  trial.objective = j.at("objective").get<double>();
  trial.ci_low = j.at("ci_low").get<double>();
  trial.ci_high = j.at("ci_high").get<double>();
  trial.samples = j.at("samples").get<uint64_t>();
  trial.remeasured = j.at("remeasured").get<uint64_t>();
  trial.validated = j.at("validated").get<bool>();
  trial.error = j.at("error").get<std::string>();
  trial.started_at = j.at("started_at").get<std::string>();
  trial.duration_s = j.at("duration_s").get<double>();
  trial.config = j.at("config").get<std::map<std::string, std::string>>();
  trial.metrics = j.at("metrics").get<std::map<std::string, double>>();
  return trial;
}

json OptionalTrial(const std::optional<db::TrialRecord>& trial) {
  return trial ? TrialToJson(*trial) : json(nullptr);
}

std::optional<db::TrialRecord> OptionalTrialFrom(const json& j) {
  if (j.is_null()) return std::nullopt;
  return TrialFromJson(j);
}

json VerdictToJson(const db::SweepVerdict& verdict) {
  json finalists = json::array();
  for (const db::FinalistRecord& finalist : verdict.finalists) {
    finalists.push_back(
        {{"pooled", TrialToJson(finalist.pooled)}, {"rounds_won", finalist.rounds_won}});
  }
  return {{"verdict", db::VerdictName(verdict.verdict)},
          {"best_knobs", verdict.best_knobs},
          {"decided_at", verdict.decided_at},
          {"default_remeasured", OptionalTrial(verdict.default_remeasured)},
          {"best_remeasured", OptionalTrial(verdict.best_remeasured)},
          {"final_rounds", verdict.final_rounds},
          {"finalists", finalists}};
}

db::SweepVerdict VerdictFromJson(const json& j) {
  db::SweepVerdict verdict;
  const std::string name = j.at("verdict").get<std::string>();
  const std::optional<db::Verdict> parsed = db::ParseVerdict(name);
  if (!parsed) throw std::invalid_argument("unknown verdict " + name);
  verdict.verdict = *parsed;
  verdict.best_knobs = j.at("best_knobs").get<std::string>();
  verdict.decided_at = j.at("decided_at").get<std::string>();
  verdict.default_remeasured = OptionalTrialFrom(j.at("default_remeasured"));
  verdict.best_remeasured = OptionalTrialFrom(j.at("best_remeasured"));
  verdict.final_rounds = j.at("final_rounds").get<uint32_t>();
  for (const json& finalist : j.at("finalists")) {
    verdict.finalists.push_back(
        {TrialFromJson(finalist.at("pooled")), finalist.at("rounds_won").get<uint32_t>()});
  }
  return verdict;
}

json SweepToJson(const db::SweepRecord& sweep) {
  json j;
  for (const auto& [name, field] : db::kSweepTextFields) j[name] = sweep.*field;
  j["default_knobs"] = sweep.default_knobs;
  j["base_config"] = sweep.base_config;
  j["parameters"] = sweep.parameters;
  j["verdict"] = sweep.verdict ? VerdictToJson(*sweep.verdict) : json(nullptr);
  return j;
}

db::SweepRecord SweepFromJson(const json& j) {
  db::SweepRecord sweep;
  for (const auto& [name, field] : db::kSweepTextFields)
    sweep.*field = j.at(name).get<std::string>();
  sweep.default_knobs = j.at("default_knobs").get<std::string>();
  sweep.base_config = j.at("base_config").get<std::map<std::string, std::string>>();
  sweep.parameters = j.at("parameters").get<std::map<std::string, std::string>>();
  if (!j.at("verdict").is_null()) sweep.verdict = VerdictFromJson(j.at("verdict"));
  return sweep;
}

json ModelToJson(const db::LinkModelRecord& model) {
  json points = json::array();
  for (const db::LinkModelPointRow& point : model.points) {
    points.push_back({point.protocol, point.polling, point.chunk_size, point.pipeline_depth,
                      point.size, point.inflight, point.median_s, point.low_s, point.high_s,
                      point.rounds, point.slices});
  }
  return {{"created_at", model.created_at},
          {"host", model.host},
          {"peer", model.peer},
          {"fabric", model.fabric},
          {"rounds", model.rounds},
          {"duration_s", model.duration_s},
          {"points", points}};
}

db::LinkModelRecord ModelFromJson(const json& j) {
  db::LinkModelRecord model;
  model.created_at = j.at("created_at").get<std::string>();
  model.host = j.at("host").get<std::string>();
  model.peer = j.at("peer").get<std::string>();
  model.fabric = j.at("fabric").get<std::string>();
  model.rounds = j.at("rounds").get<uint32_t>();
  model.duration_s = j.at("duration_s").get<double>();
  for (const json& p : j.at("points")) {
    model.points.push_back({p.at(0).get<std::string>(), p.at(1).get<std::string>(),
                            p.at(2).get<uint64_t>(), p.at(3).get<uint32_t>(),
                            p.at(4).get<uint64_t>(), p.at(5).get<uint32_t>(), p.at(6).get<double>(),
                            p.at(7).get<double>(), p.at(8).get<double>(), p.at(9).get<uint32_t>(),
                            p.at(10).get<uint32_t>()});
  }
  return model;
}

}  // namespace

std::string EncodeLinkReport(const LinkReport& report) {
  const db::ClusterLinkRecord& link = report.link;
  json trials = json::array();
  for (const db::TrialRecord& trial : report.trials) trials.push_back(TrialToJson(trial));
  const json j = {{"round", link.round},
                  {"pair", link.pair},
                  {"client_rank", link.client_rank},
                  {"server_rank", link.server_rank},
                  {"client_host", link.client_host},
                  {"client_device", link.client_device},
                  {"server_host", link.server_host},
                  {"server_device", link.server_device},
                  {"status", db::LinkStatusName(link.status)},
                  {"error", link.error},
                  {"finished_at", link.finished_at},
                  {"seconds", report.seconds},
                  {"sweep", report.sweep ? SweepToJson(*report.sweep) : json(nullptr)},
                  {"trials", trials},
                  {"model", report.model ? ModelToJson(*report.model) : json(nullptr)}};
  return j.dump();
}

Result<LinkReport> DecodeLinkReport(std::string_view text) {
  try {
    const json j = json::parse(text);
    LinkReport report;
    db::ClusterLinkRecord& link = report.link;
    link.round = j.at("round").get<uint32_t>();
    link.pair = j.at("pair").get<uint32_t>();
    link.client_rank = j.at("client_rank").get<uint32_t>();
    link.server_rank = j.at("server_rank").get<uint32_t>();
    link.client_host = j.at("client_host").get<std::string>();
    link.client_device = j.at("client_device").get<std::string>();
    link.server_host = j.at("server_host").get<std::string>();
    link.server_device = j.at("server_device").get<std::string>();
    const std::string status = j.at("status").get<std::string>();
    const std::optional<db::LinkStatus> parsed = db::ParseLinkStatus(status);
    if (!parsed) throw std::invalid_argument("unknown link status " + status);
    link.status = *parsed;
    link.error = j.at("error").get<std::string>();
    link.finished_at = j.at("finished_at").get<std::string>();
    report.seconds = j.at("seconds").get<double>();
    if (!j.at("sweep").is_null()) report.sweep = SweepFromJson(j.at("sweep"));
    for (const json& trial : j.at("trials")) report.trials.push_back(TrialFromJson(trial));
    if (!j.at("model").is_null()) report.model = ModelFromJson(j.at("model"));
    return report;
  } catch (const std::exception& error) {
    return Status::Corruption(std::string("a cluster link report is malformed: ") + error.what());
  }
}

Result<db::ClusterLinkRecord> StoreLinkReport(db::Store& store, int64_t cluster_id,
                                              const LinkReport& report) {
  db::ClusterLinkRecord link = report.link;
  link.cluster_id = cluster_id;
  link.sweep_id = 0;
  link.model_id = 0;
  if (report.model) {
    ARTUNE_ASSIGN_OR_RETURN(link.model_id, store.InsertLinkModel(*report.model));
  }
  if (report.sweep) {
    ARTUNE_ASSIGN_OR_RETURN(link.sweep_id, store.InsertSweep(*report.sweep));
    for (db::TrialRecord trial : report.trials) {
      trial.sweep_id = link.sweep_id;
      ARTUNE_RETURN_IF_ERROR(store.InsertTrial(trial).status());
    }
    if (report.sweep->verdict) {
      ARTUNE_RETURN_IF_ERROR(store.RecordSweepVerdict(link.sweep_id, *report.sweep->verdict));
    }
    if (!report.sweep->finished_at.empty())
      ARTUNE_RETURN_IF_ERROR(store.FinishSweep(link.sweep_id));
  }
  ARTUNE_RETURN_IF_ERROR(store.InsertClusterLink(link));
  return link;
}

std::string EncodeCapture(const db::CaptureRecord& capture) {
  json methods = json::array();
  for (const db::CaptureMethodRow& row : capture.methods) {
    methods.push_back(db::CaptureMethodJson<json>(row));
  }
  return json{{"started_at", capture.started_at},
              {"backend", capture.backend},
              {"process", capture.process},
              {"duration_s", capture.duration_s},
              {"lost_events", capture.lost_events},
              {"profile_json", capture.profile_json},
              {"methods", methods}}
      .dump();
}

Result<db::CaptureRecord> DecodeCapture(std::string_view text) {
  try {
    const json j = json::parse(text);
    db::CaptureRecord capture;
    capture.started_at = j.at("started_at").get<std::string>();
    capture.backend = j.at("backend").get<std::string>();
    capture.process = j.at("process").get<std::string>();
    capture.duration_s = j.at("duration_s").get<double>();
    capture.lost_events = j.at("lost_events").get<uint64_t>();
    capture.profile_json = j.at("profile_json").get<std::string>();
    for (const json& row : j.at("methods")) {
      capture.methods.push_back(
          {row.at("method").get<std::string>(), row.at("direction").get<std::string>(),
           row.at("messages").get<uint64_t>(), row.at("bytes").get<uint64_t>(),
           row.at("scheme").get<std::string>(), row.at("small").get<uint64_t>(),
           row.at("medium").get<uint64_t>(), row.at("large").get<uint64_t>()});
    }
    return capture;
  } catch (const std::exception& error) {
    return Status::Corruption(std::string("a capture sent to the ranks is malformed: ") +
                              error.what());
  }
}

}  // namespace artune::cluster
