#include "artune/report/cluster_report.h"

#include <vector>

#include "artune/db/trial_knob_text.h"
#include "artune/report/html.h"
#include "artune/report/svg.h"
#include "run_facts.h"

namespace artune::report {
namespace {

std::string Joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : ", ") + word;
  return text;
}

std::string End(const std::string& host, const std::string& device) {
  return device.empty() ? host : host + " (" + device + ")";
}

std::string Hosts(const db::ClusterLinkRecord& link) {
  return link.client_host + " ↔ " + link.server_host;
}

std::string Objective(const tuner::ClusterData& data) {
  return data.objective + (data.input.goal == tuner::ObjectiveGoal::kMax ? " (higher is better)"
                                                                         : " (lower is better)");
}

void AddSummary(HtmlDocument& document, const tuner::ClusterData& data,
                const tuner::ClusterAnalysis& analysis) {
  document.AddFacts(ClusterRunFacts(
      data.cluster,
      {{"measurement", data.cluster.measurement},
       {"objective", data.objective.empty() ? "none measured" : Objective(data)},
       {"links", std::to_string(data.links.size()) + " (" + std::to_string(analysis.usable_links) +
                     " measured, " + std::to_string(analysis.failed_links) + " failed)"},
       {"winner chosen by", std::string(tuner::ClusterGoalName(data.input.cluster_goal))}}));
}

void AddWinner(HtmlDocument& document, const tuner::ClusterData& data,
               const tuner::ClusterAnalysis& analysis) {
  document.BeginSection("Cluster winner");
  const auto& winner = analysis.winner.winner;
  if (!winner) {
    document.AddParagraph("No winner: " + analysis.winner.reason + ".");
    document.EndSection();
    return;
  }
  document.AddParagraph("Winner: " + db::TrialKnobText(winner->key, ", ") + ", " +
                        analysis.winner.reason + ". Its worst link is " +
                        Hosts(data.links[winner->worst_link]) + " at " +
                        FormatNumber(winner->worst) + ".");
  Table table;
  table.header = {"config", "worst link", "on", "geometric mean"};
  table.numeric = {false, true, false, true};
  for (const tuner::ConfigScore& score : analysis.winner.candidates) {
    table.rows.push_back({db::TrialKnobText(score.key, ", ") +
                              (score.key == data.input.default_key ? " (default)" : ""),
                          FormatNumber(score.worst), Hosts(data.links[score.worst_link]),
                          score.geomean_ok ? FormatNumber(score.geomean) : "-"});
  }
  table.highlighted_row = 0;
  table.caption = "Every config measured on every measured link, best first";
  document.AddTable(table);
  document.EndSection();
}

void AddOutliersAndGroups(HtmlDocument& document, const tuner::ClusterData& data,
                          const tuner::ClusterAnalysis& analysis) {
  if (!analysis.outliers.empty()) {
    document.BeginSection("Outlier links");
    const char* worse = data.input.goal == tuner::ObjectiveGoal::kMax ? "lower" : "slower";
    for (const tuner::Outlier& outlier : analysis.outliers) {
      document.AddParagraph("Look at the link " + Hosts(data.links[outlier.link]) + ": " +
                            tuner::FormatDeviations(outlier.deviations) + " MAD " + worse +
                            " than the median under " +
                            (analysis.matrix.is_winner ? "the winner" : "the default") + " (" +
                            FormatNumber(outlier.objective) + " against " +
                            FormatNumber(outlier.median) + ").");
    }
    document.EndSection();
  }
  if (analysis.grouping.groups.size() > 1) {
    document.BeginSection("Host groups");
    document.AddParagraph("Split because " + analysis.grouping.reason + ".");
    Table table;
    table.header = {"devices", "hosts", "links within", "winner"};
    table.numeric = {false, false, true, false};
    for (const tuner::HostGroup& group : analysis.grouping.groups) {
      table.rows.push_back({group.device_class.empty() ? "unknown" : group.device_class,
                            Joined(group.hosts), std::to_string(group.links.size()),
                            group.winner.winner ? db::TrialKnobText(group.winner.winner->key, ", ")
                                                : "none: " + group.winner.reason});
    }
    document.AddTable(table);
    document.EndSection();
  }
}

void AddLinks(HtmlDocument& document, const tuner::ClusterData& data,
              const tuner::ClusterAnalysis& analysis) {
  document.BeginSection("Links");
  Table table;
  table.header = {"round", "pair",      "client",  "server", "status", "sweep",
                  "best",  "objective", "default", "gain",   "winner", "error"};
  table.numeric = {true, true, false, false, false, true, false, true, true, true, true, false};
  for (size_t i = 0; i < data.links.size(); ++i) {
    const db::ClusterLinkRecord& link = data.links[i];
    const tuner::LinkRow& row = analysis.rows[i];
    const bool usable = !row.best_key.empty();
    table.rows.push_back(
        {std::to_string(link.round), std::to_string(link.pair),
         End(link.client_host, link.client_device), End(link.server_host, link.server_device),
         std::string(db::LinkStatusName(link.status)),
         link.sweep_id == 0 ? "-" : std::to_string(link.sweep_id),
         usable ? db::TrialKnobText(row.best_key, ", ") : "-",
         usable ? FormatNumber(row.best_objective) : "-",
         row.default_objective ? FormatNumber(*row.default_objective) : "-",
         row.gain ? FormatNumber(*row.gain) + "×" : "-",
         row.winner_objective ? FormatNumber(*row.winner_objective) : "-", link.error});
  }
  document.AddTable(table);
  document.EndSection();
}

}  // namespace

std::string ClusterHeatmapSvg(const tuner::ClusterData& data,
                              const tuner::ClusterAnalysis& analysis) {
  const tuner::HostMatrix& matrix = analysis.matrix;
  Heatmap heatmap;
  heatmap.title = Objective(data) + " under " +
                  (matrix.is_winner ? "the winner " : "the default ") +
                  db::TrialKnobText(matrix.config_key, ", ");
  heatmap.row_axis = "client host";
  heatmap.column_axis = "server host";
  heatmap.value_name = data.objective;
  heatmap.lower_is_better = data.input.goal != tuner::ObjectiveGoal::kMax;
  heatmap.row_labels = matrix.hosts;
  heatmap.column_labels = matrix.hosts;
  for (size_t r = 0; r < matrix.hosts.size(); ++r) {
    std::vector<HeatmapCell> row;
    for (size_t c = 0; c < matrix.hosts.size(); ++c) {
      const tuner::HostMatrix::Cell& cell = matrix.cells[r][c];
      HeatmapCell shown;
      const std::string link = matrix.hosts[r] + " to " + matrix.hosts[c];
      if (cell.value) {
        shown.value = cell.value;
        shown.text = FormatNumber(*cell.value) + (cell.outlier ? "!" : "");
        shown.tooltip =
            link + ": " + data.objective + " " + FormatNumber(*cell.value) +
            (cell.links > 1 ? " (the worst of " + std::to_string(cell.links) + " links)" : "") +
            (cell.outlier ? " — outlier" : "");
      } else if (cell.failed) {
        shown.tooltip = link + ": failed";
      } else if (cell.links > 0) {
        shown.tooltip = link + ": not measured with this config";
      } else {
        shown.tooltip = link + ": no link";
      }
      row.push_back(std::move(shown));
    }
    heatmap.cells.push_back(std::move(row));
  }
  return HeatmapSvg(heatmap);
}

std::string ClusterReportHtml(const tuner::ClusterData& data,
                              const tuner::ClusterAnalysis& analysis) {
  const std::string title = "artune cluster " + std::to_string(data.cluster.id);
  HtmlDocument document(title);
  document.AddHeading(1, title);
  AddSummary(document, data, analysis);
  AddWinner(document, data, analysis);
  if (analysis.matrix.omitted_hosts > 0) {
    document.BeginSection("Heatmap");
    document.AddParagraph("No heatmap: " + std::to_string(analysis.matrix.omitted_hosts) +
                          " hosts are more than " + std::to_string(tuner::kMatrixMaxHosts) +
                          " a grid can show; the links and the outliers speak for them.");
    document.EndSection();
  } else if (!analysis.matrix.config_key.empty()) {
    document.BeginSection("Heatmap");
    document.AddMarkup(ClusterHeatmapSvg(data, analysis));
    document.AddParagraph(
        "Darker is better. Rows are the client host of a link, columns its server host; "
        "\"!\" marks an outlier link; hover a cell for its numbers; hatched cells have no "
        "link, or no valid measurement with this config.");
    document.EndSection();
  }
  AddOutliersAndGroups(document, data, analysis);
  AddLinks(document, data, analysis);
  return document.Finish();
}

}  // namespace artune::report
