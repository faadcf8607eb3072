#include "cluster_model_text.h"

#include <string>
#include <vector>

#include "artune/cluster/cluster_choice.h"
#include "artune/cluster/cluster_summary.h"
#include "cluster_text.h"
#include "format.h"

namespace artune::cli {
namespace {

std::string Millis(double seconds) { return FormatNumber(seconds * 1e3, 3); }

void PrintLinks(const tuner::ClusterModelData& data,
                const std::map<std::pair<uint32_t, uint32_t>, double>& seconds, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"ROUND", "PAIR", "CLIENT", "SERVER", "STATUS",
                                                 "MODEL", "PREDICTED BEST", "BEST MS", "DEFAULT MS",
                                                 "PER CALL MS", "MS PER MIB", "SECONDS", "NOTE"}};
  for (size_t i = 0; i < data.links.size(); ++i) {
    const db::ClusterLinkRecord& link = data.links[i];
    const std::optional<model::Prediction>& prediction = data.prediction.links[i];
    const std::optional<tuner::LinkCosts>& costs = data.prediction.costs[i];
    std::string note = link.status == db::LinkStatus::kOk ? "" : link.error;
    for (const tuner::ModelOutlier& outlier : data.prediction.outliers) {
      if (outlier.link == i) note += (note.empty() ? "outlier: " : ", ") + outlier.term;
    }
    const auto measured = seconds.find({link.client_rank, link.server_rank});
    rows.push_back(
        {std::to_string(link.round), std::to_string(link.pair),
         LinkEndText(link.client_host, link.client_device),
         LinkEndText(link.server_host, link.server_device),
         std::string(db::LinkStatusName(link.status)),
         link.model_id == 0 ? "-" : std::to_string(link.model_id),
         prediction ? tuner::KnobKeyText(db::TrialKnobKey(prediction->best().knobs)) : "-",
         prediction ? Millis(prediction->best().cost.seconds) : "-",
         prediction ? Millis(prediction->default_config.cost.seconds) : "-",
         costs ? Millis(costs->per_call_s) : "-", costs ? Millis(costs->per_byte_s * 1048576) : "-",
         measured != seconds.end() ? FormatNumber(measured->second, 1)
                                   : (seconds.empty() ? "-" : "stored"),
         note});
  }
  PrintTable(rows,
             {true, true, false, false, false, true, false, true, true, true, true, true, false},
             out);
}

void PrintClusterBest(const tuner::ClusterModelData& data, std::ostream& out) {
  const tuner::ClusterModelPrediction& prediction = data.prediction;
  if (prediction.ranked.empty()) {
    out << "Cluster  no prediction: no link has a model\n";
    return;
  }
  const tuner::ClusterConfigTotal& best = prediction.ranked.front();
  out << "Cluster  " << tuner::KnobKeyText(best.key) << ": predicted " << Millis(best.seconds)
      << " ms for one pass on each of the " << prediction.usable_links
      << " links (the least total of " << prediction.ranked.size() << " configs); slowest link "
      << tuner::LinkHosts(data.links[best.worst_link]) << " at " << Millis(best.worst_s) << " ms\n";
  if (prediction.default_total) {
    out << "Default  " << tuner::KnobKeyText(prediction.default_total->key) << ": "
        << Millis(prediction.default_total->seconds) << " ms; ";
    if (prediction.margin > 0) {
      out << "the cluster's best saves " << FormatNumber(prediction.margin * 100, 1) << " %\n";
    } else {
      out << "no config of the space is predicted faster\n";
    }
  }
  out << "`artune apply config --cluster " << data.cluster.id
      << "` writes the cluster's best; `artune predict --link-model ID` re-predicts one link\n";
}

}  // namespace

void PrintClusterModelRun(const tuner::ClusterModelData& data,
                          const std::map<std::pair<uint32_t, uint32_t>, double>& seconds,
                          std::ostream& out) {
  const tuner::ClusterModelPrediction& prediction = data.prediction;
  out << "Workload " << data.workload << ", " << FormatNumber(prediction.inflight, 0)
      << " calls in flight; search space " << data.space.Canonical()
      << "; each link's model: `artune model show ID`\n\n";
  PrintLinks(data, seconds, out);
  out << "\n";
  PrintClusterBest(data, out);
  if (!prediction.outliers.empty()) {
    out << "\nOutliers (a per-call or per-byte cost more than " << tuner::kOutlierDeviations
        << " MAD above the links' median and at least " << tuner::kModelOutlierRatio << "x it)\n";
    for (const tuner::ModelOutlier& outlier : prediction.outliers) {
      out << "  "
          << tuner::ModelOutlierSentence(outlier, tuner::LinkHosts(data.links[outlier.link]))
          << "\n";
    }
  }
}

}  // namespace artune::cli
