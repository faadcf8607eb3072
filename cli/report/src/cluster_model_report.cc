#include "artune/report/cluster_model_report.h"

#include <algorithm>
#include <vector>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_summary.h"
#include "artune/db/trial_knob_text.h"
#include "artune/report/html.h"
#include "artune/report/svg.h"
#include "run_facts.h"

namespace artune::report {
namespace {

// Configs listed in the report's table of totals; the rest are counted.
constexpr size_t kConfigsShown = 20;

std::string BestKey(const model::Prediction& prediction) {
  return db::TrialKnobKey(prediction.best().knobs);
}

std::string Millis(double seconds) { return FormatNumber(seconds * 1e3) + " ms"; }

std::string End(const std::string& host, const std::string& device) {
  return device.empty() ? host : host + " (" + device + ")";
}

// The link's predicted pass time under `key` (nullopt: no model, or not costed).
std::optional<double> PredictedUnder(const tuner::ClusterModelData& data, size_t link,
                                     const std::string& key) {
  const std::optional<model::Prediction>& prediction = data.prediction.links[link];
  if (!prediction) return std::nullopt;
  for (const model::ConfigPrediction& config : prediction->ranked) {
    if (db::TrialKnobKey(config.knobs) == key) return config.cost.seconds;
  }
  return std::nullopt;
}

std::string OutlierTerms(const tuner::ClusterModelData& data, size_t link) {
  std::string terms;
  for (const tuner::ModelOutlier& outlier : data.prediction.outliers) {
    if (outlier.link == link) terms += (terms.empty() ? "" : ", ") + outlier.term;
  }
  return terms;
}

void AddSummary(HtmlDocument& document, const tuner::ClusterModelData& data) {
  const tuner::ClusterModelPrediction& prediction = data.prediction;
  document.AddFacts(ClusterRunFacts(
      data.cluster,
      {{"measurement", "model: each link measured its link model; every config is predicted"},
       {"workload", data.workload + ", " + FormatNumber(prediction.inflight) + " calls in flight"},
       {"search space", data.space.Canonical()},
       {"links", std::to_string(data.links.size()) + " (" +
                     std::to_string(prediction.usable_links) + " with a model, " +
                     std::to_string(data.links.size() - prediction.usable_links) + " without)"}}));
}

void AddClusterBest(HtmlDocument& document, const tuner::ClusterModelData& data) {
  const tuner::ClusterModelPrediction& prediction = data.prediction;
  document.BeginSection("Cluster's predicted best");
  if (prediction.ranked.empty()) {
    document.AddParagraph("No prediction: no link has a model.");
    document.EndSection();
    return;
  }
  const tuner::ClusterConfigTotal& best = prediction.ranked.front();
  std::string text = "Predicted best: " + db::TrialKnobText(best.key, ", ") + ", " +
                     Millis(best.seconds) + " for one pass of the workload on each of the " +
                     std::to_string(prediction.usable_links) + " links; its slowest link is " +
                     tuner::LinkHosts(data.links[best.worst_link]) + " at " + Millis(best.worst_s) +
                     ".";
  if (prediction.default_total) {
    text +=
        " The default (" + db::TrialKnobText(prediction.default_total->key, ", ") + ") totals " +
        Millis(prediction.default_total->seconds) +
        (prediction.margin > 0 ? ": the best saves " + FormatNumber(prediction.margin * 100) + " %."
                               : ": no config of the space is predicted faster.");
  }
  document.AddParagraph(text);
  Table table;
  table.header = {"config", "predicted total", "slowest link", "on"};
  table.numeric = {false, true, true, false};
  for (size_t i = 0; i < prediction.ranked.size() && i < kConfigsShown; ++i) {
    const tuner::ClusterConfigTotal& total = prediction.ranked[i];
    const bool is_default = prediction.default_total && prediction.default_total->key == total.key;
    table.rows.push_back({db::TrialKnobText(total.key, ", ") + (is_default ? " (default)" : ""),
                          Millis(total.seconds), Millis(total.worst_s),
                          tuner::LinkHosts(data.links[total.worst_link])});
  }
  table.highlighted_row = 0;
  table.caption = "Every config's predicted total over the links with a model, best first" +
                  (prediction.ranked.size() > kConfigsShown
                       ? std::string(" (the first ") + std::to_string(kConfigsShown) + " of " +
                             std::to_string(prediction.ranked.size()) + ")"
                       : std::string());
  document.AddTable(table);
  document.EndSection();
}

// Client hosts as rows, server hosts as columns: each link's predicted pass time
// under the cluster's best (the worst of several links between two hosts).
std::string PredictedHeatmapSvg(const tuner::ClusterModelData& data, const std::string& key,
                                const std::vector<std::string>& hosts) {
  const auto index_of = [&](const std::string& host) {
    return static_cast<size_t>(std::find(hosts.begin(), hosts.end(), host) - hosts.begin());
  };
  Heatmap heatmap;
  heatmap.title = "Predicted ms per pass under " + db::TrialKnobText(key, ", ");
  heatmap.row_axis = "client host";
  heatmap.column_axis = "server host";
  heatmap.value_name = "predicted ms per pass";
  heatmap.row_labels = hosts;
  heatmap.column_labels = hosts;
  heatmap.cells.assign(hosts.size(), std::vector<HeatmapCell>(hosts.size()));
  for (size_t r = 0; r < hosts.size(); ++r) {
    for (size_t c = 0; c < hosts.size(); ++c) {
      heatmap.cells[r][c].tooltip = hosts[r] + " to " + hosts[c] + ": no link";
    }
  }
  for (size_t i = 0; i < data.links.size(); ++i) {
    const db::ClusterLinkRecord& link = data.links[i];
    HeatmapCell& cell = heatmap.cells[index_of(link.client_host)][index_of(link.server_host)];
    const std::string name = link.client_host + " to " + link.server_host;
    const std::optional<double> seconds = PredictedUnder(data, i, key);
    if (!seconds) {
      if (!cell.value) cell.tooltip = name + ": no model (" + link.error + ")";
      continue;
    }
    const double ms = *seconds * 1e3;
    if (cell.value && *cell.value >= ms) continue;
    const std::string outlier = OutlierTerms(data, i);
    cell.value = ms;
    cell.text = FormatNumber(ms) + (outlier.empty() ? "" : "!");
    cell.tooltip = name + ": " + FormatNumber(ms) + " ms predicted" +
                   (outlier.empty() ? "" : " — outlier, " + outlier);
  }
  return HeatmapSvg(heatmap);
}

void AddHeatmap(HtmlDocument& document, const tuner::ClusterModelData& data) {
  if (data.prediction.ranked.empty()) return;
  std::vector<std::string> hosts;
  for (const db::ClusterLinkRecord& link : data.links) {
    for (const std::string& host : {link.client_host, link.server_host}) {
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    }
  }
  document.BeginSection("Heatmap");
  if (hosts.size() > tuner::kMatrixMaxHosts) {
    document.AddParagraph("No heatmap: " + std::to_string(hosts.size()) + " hosts are more than " +
                          std::to_string(tuner::kMatrixMaxHosts) +
                          " a grid can show; the links and the outliers speak for them.");
  } else {
    document.AddMarkup(PredictedHeatmapSvg(data, data.prediction.ranked.front().key, hosts));
    document.AddParagraph(
        "Darker is faster. Rows are the client host of a link, columns its server host; \"!\" "
        "marks an outlier link; hover a cell for its numbers; hatched cells have no link, or "
        "no model.");
  }
  document.EndSection();
}

void AddOutliers(HtmlDocument& document, const tuner::ClusterModelData& data) {
  const tuner::ClusterModelPrediction& prediction = data.prediction;
  document.BeginSection("Outlier links");
  document.AddParagraph(
      "The rule: a link whose per-call cost (its smallest eager call) or per-byte cost (the "
      "slope of its rendezvous read from 64 KiB to 1 MiB) is more than " +
      FormatNumber(tuner::kOutlierDeviations) +
      " scaled MAD above the links' median and at least " +
      FormatNumber(tuner::kModelOutlierRatio) + "x it; it needs " +
      std::to_string(tuner::kOutlierMinLinks) + " links with a model.");
  if (prediction.outliers.empty()) {
    document.AddParagraph("No link stands out.");
  } else {
    Table table;
    table.header = {"link", "term", "value", "links' median", "ratio", "MAD above"};
    table.numeric = {false, false, true, true, true, true};
    for (const tuner::ModelOutlier& outlier : prediction.outliers) {
      const bool per_byte = outlier.term == "per-byte";
      const auto value = [&](double v) {
        return per_byte ? FormatNumber(v * 1048576 * 1e3) + " ms per MiB" : Millis(v);
      };
      table.rows.push_back({tuner::LinkHosts(data.links[outlier.link]), outlier.term,
                            value(outlier.value), value(outlier.median),
                            FormatNumber(outlier.ratio) + "×",
                            tuner::FormatDeviations(outlier.deviations)});
    }
    document.AddTable(table);
    for (const tuner::ModelOutlier& outlier : prediction.outliers) {
      document.AddParagraph(
          tuner::ModelOutlierSentence(outlier, tuner::LinkHosts(data.links[outlier.link])) + ".");
    }
  }
  document.EndSection();
}

void AddLinks(HtmlDocument& document, const tuner::ClusterModelData& data) {
  document.BeginSection("Links");
  Table table;
  table.header = {"round",      "pair",     "client",  "server",         "status",
                  "model",      "per call", "per MiB", "predicted best", "predicted ms",
                  "default ms", "margin",   "outlier", "error"};
  table.numeric = {true, true,  false, false, false, true,  true,
                   true, false, true,  true,  true,  false, false};
  for (size_t i = 0; i < data.links.size(); ++i) {
    const db::ClusterLinkRecord& link = data.links[i];
    const std::optional<model::Prediction>& prediction = data.prediction.links[i];
    const std::optional<tuner::LinkCosts>& costs = data.prediction.costs[i];
    table.rows.push_back(
        {std::to_string(link.round), std::to_string(link.pair),
         End(link.client_host, link.client_device), End(link.server_host, link.server_device),
         std::string(db::LinkStatusName(link.status)),
         link.model_id == 0 ? "-" : std::to_string(link.model_id),
         costs ? Millis(costs->per_call_s) : "-", costs ? Millis(costs->per_byte_s * 1048576) : "-",
         prediction ? db::TrialKnobText(BestKey(*prediction), ", ") : "-",
         prediction ? FormatNumber(prediction->best().cost.seconds * 1e3) : "-",
         prediction ? FormatNumber(prediction->default_config.cost.seconds * 1e3) : "-",
         prediction ? FormatNumber(prediction->margin * 100) + " %" : "-", OutlierTerms(data, i),
         link.error});
  }
  table.caption = "Each link's model (`artune report --model ID`) and its own predicted best";
  document.AddTable(table);
  document.EndSection();
}

}  // namespace

std::string ClusterModelReportHtml(const tuner::ClusterModelData& data) {
  const std::string title = "artune cluster " + std::to_string(data.cluster.id);
  HtmlDocument document(title);
  document.AddHeading(1, title);
  AddSummary(document, data);
  AddClusterBest(document, data);
  AddHeatmap(document, data);
  AddOutliers(document, data);
  AddLinks(document, data);
  return document.Finish();
}

}  // namespace artune::report
