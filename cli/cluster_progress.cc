#include "cluster_progress.h"

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_summary.h"
#include "cluster_model_text.h"
#include "format.h"

namespace artune::cli {
namespace {

std::string Seconds(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << seconds;
  return out.str();
}

// "1 round", "3 rounds".
std::string Count(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string End(const std::string& host, const std::string& device, uint32_t rank) {
  return host + " (rank " + std::to_string(rank) + ", " + device + ")";
}

}  // namespace

void ClusterProgress::Began(int64_t cluster_id, const std::string& measurement,
                            const tuner::PairSchedule& schedule, size_t stored_before) {
  cluster_id_ = cluster_id;
  measurement_ = measurement;
  schedule_ = &schedule;
  started_ = std::chrono::steady_clock::now();
  if (!speak_) return;
  std::cerr << "cluster run " << cluster_id_ << ": " << schedule_->ranks << " ranks, pairs "
            << schedule_->spec << ": " << Count(schedule_->rounds.size(), "round") << ", "
            << Count(schedule_->links(), "link") << ", " << measurement_
            << (stored_before > 0 ? ", " + std::to_string(stored_before) + " stored before" : "")
            << "\n";
}

void ClusterProgress::Stored(const cluster::LinkReport& report,
                             const db::ClusterLinkRecord& stored) {
  ++measured_;
  if (stored.status != db::LinkStatus::kOk) ++failed_;
  link_seconds_[{stored.client_rank, stored.server_rank}] = report.seconds;
  if (!speak_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::cerr << "round " << stored.round + 1 << "/" << schedule_->rounds.size() << ", pair "
            << stored.pair + 1 << "/" << schedule_->rounds[stored.round].size() << ": "
            << End(stored.client_host, stored.client_device, stored.client_rank) << " -> "
            << End(stored.server_host, stored.server_device, stored.server_rank) << ": "
            << db::LinkStatusName(stored.status);
  if (stored.sweep_id != 0) std::cerr << ", sweep " << stored.sweep_id;
  if (stored.model_id != 0) std::cerr << ", link model " << stored.model_id;
  if (report.sweep && report.sweep->verdict) {
    std::cerr << ", " << db::VerdictName(report.sweep->verdict->verdict);
  }
  if (!stored.error.empty()) std::cerr << " (" << stored.error << ")";
  std::cerr << ", " << Seconds(report.seconds) << " s; " << measured_ + resumed_ << "/"
            << schedule_->links() << " links, elapsed " << Seconds(elapsed) << " s\n";
}

void ClusterProgress::RoundDone(size_t round, double seconds) {
  round_seconds_.push_back(seconds);
  if (!speak_) return;
  std::cerr << "round " << round + 1 << "/" << schedule_->rounds.size() << " done in "
            << Seconds(seconds) << " s\n";
}

// A model run's end: the models, the predictions and the outliers
// (cluster_model_text.h), and kUnavailable when some link failed.
Status ClusterProgress::FinishedModels(db::Store& store) {
  ARTUNE_ASSIGN_OR_RETURN(const tuner::ClusterModelData data,
                          tuner::ReadClusterModels(store, cluster_id_));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const size_t failed = data.links.size() - data.prediction.usable_links;
  if (json_) {
    nlohmann::ordered_json out = tuner::ClusterModelJson(data);
    for (nlohmann::ordered_json& link : out["links"]) {
      auto found = link_seconds_.find(
          {link["client_rank"].get<uint32_t>(), link["server_rank"].get<uint32_t>()});
      link["seconds"] = found != link_seconds_.end() ? nlohmann::ordered_json(found->second)
                                                     : nlohmann::ordered_json();
    }
    // The run's summary as the other cluster runs give it (bench/cluster-run reads it).
    out["ranks"] = schedule_->ranks;
    out["pairs"] = schedule_->spec;
    out["measurement"] = measurement_;
    out["rounds"] = schedule_->rounds.size();
    out["scheduled_links"] = schedule_->links();
    out["stored_links"] = data.links.size();
    out["failed"] = failed;
    out["measured"] = measured_;
    out["resumed"] = resumed_;
    out["seconds"] = elapsed;
    out["round_seconds"] = round_seconds_;
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "Cluster run " << cluster_id_ << ": " << schedule_->ranks << " ranks, pairs "
              << schedule_->spec << " (" << Count(schedule_->rounds.size(), "round") << ", "
              << Count(schedule_->links(), "link") << "), link models\n";
    PrintClusterModelRun(data, link_seconds_, std::cout);
    std::cout << Count(data.links.size(), "link") << " stored: " << data.links.size() - failed
              << " ok, " << failed << " failed; " << measured_ << " measured now, " << resumed_
              << " stored before; " << Seconds(elapsed) << " s\n";
  }
  if (failed > 0) {
    return Status::Unavailable(std::to_string(failed) + " of " + std::to_string(data.links.size()) +
                               " links of cluster run " + std::to_string(cluster_id_) +
                               " failed (stored with their errors)");
  }
  return Status::Ok();
}

Status ClusterProgress::Finished(db::Store& store) {
  if (measurement_ == tuner::kModelMeasurement) return FinishedModels(store);
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<tuner::LinkVerdict> links,
                          tuner::ReadLinkVerdicts(store, cluster_id_));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  size_t failed = 0;
  nlohmann::ordered_json link_list = nlohmann::ordered_json::array();
  std::vector<std::vector<std::string>> rows = {
      {"round", "pair", "client", "server", "status", "sweep", "verdict", "winner", "seconds"}};
  for (const tuner::LinkVerdict& entry : links) {
    const auto& [link, verdict] = entry;
    if (link.status != db::LinkStatus::kOk) ++failed;
    auto found = link_seconds_.find({link.client_rank, link.server_rank});
    const std::optional<double> seconds =
        found != link_seconds_.end() ? std::optional<double>(found->second) : std::nullopt;
    link_list.push_back(tuner::RunLinkJson(entry, seconds));
    rows.push_back({std::to_string(link.round), std::to_string(link.pair),
                    link.client_host + " " + link.client_device,
                    link.server_host + " " + link.server_device,
                    std::string(db::LinkStatusName(link.status)),
                    link.sweep_id == 0 ? "-" : std::to_string(link.sweep_id),
                    verdict ? std::string(db::VerdictName(verdict->verdict)) : "-",
                    verdict && !verdict->best_knobs.empty() ? verdict->best_knobs : "-",
                    seconds ? Seconds(*seconds) : "stored"});
  }
  if (json_) {
    nlohmann::ordered_json out = {{"cluster_id", cluster_id_},
                                  {"ranks", schedule_->ranks},
                                  {"pairs", schedule_->spec},
                                  {"measurement", measurement_},
                                  {"rounds", schedule_->rounds.size()},
                                  {"scheduled_links", schedule_->links()},
                                  {"stored_links", links.size()},
                                  {"measured", measured_},
                                  {"resumed", resumed_},
                                  {"failed", failed},
                                  {"seconds", elapsed},
                                  {"round_seconds", round_seconds_},
                                  {"links", link_list}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "Cluster run " << cluster_id_ << ": " << schedule_->ranks << " ranks, pairs "
              << schedule_->spec << " (" << Count(schedule_->rounds.size(), "round") << ", "
              << Count(schedule_->links(), "link") << "), " << measurement_ << "\n";
    PrintTable(rows, {true, true, false, false, false, true, false, false, true}, std::cout);
    std::cout << Count(links.size(), "link") << " stored: " << links.size() - failed << " ok, "
              << failed << " failed; " << measured_ << " measured now, " << resumed_
              << " stored before; " << Seconds(elapsed) << " s\n"
              << "`artune results --sweep ID` shows a link's trials and winner\n";
  }
  if (failed > 0) {
    return Status::Unavailable(std::to_string(failed) + " of " + std::to_string(links.size()) +
                               " links of cluster run " + std::to_string(cluster_id_) +
                               " failed (stored with their errors)");
  }
  return Status::Ok();
}

}  // namespace artune::cli
