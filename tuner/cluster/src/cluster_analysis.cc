#include "artune/cluster/cluster_analysis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "artune/tuner/stats.h"

namespace artune::tuner {
namespace {

std::string Join(const std::vector<std::string>& words, std::string_view separator) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += separator;
    text += word;
  }
  return text;
}

// The worse of two objectives under `goal`.
double Worse(ObjectiveGoal goal, double a, double b) { return Better(goal, a, b) ? b : a; }

// Orders candidates best first: by score, then the default, then key order, so the
// order (and the winner) never depends on the order links were stored in.
bool RanksBefore(const ClusterInput& input, const ConfigScore& a, const ConfigScore& b) {
  if (a.score != b.score) return Better(input.goal, a.score, b.score);
  const bool a_default = a.key == input.default_key;
  const bool b_default = b.key == input.default_key;
  if (a_default != b_default) return a_default;
  return a.key < b.key;
}

std::string LinkCount(size_t count) {
  return std::to_string(count) + (count == 1 ? " usable link" : " usable links");
}

// The best key of one link: its sweep's own choice when measured, else the best
// objective (ties: the default, then key order).
std::string BestKeyOfLink(const ClusterInput& input, const LinkInput& link) {
  if (!link.chosen.empty() && link.objectives.count(link.chosen) > 0) return link.chosen;
  std::string best;
  for (const auto& [key, value] : link.objectives) {
    if (best.empty()) {
      best = key;
      continue;
    }
    const double current = link.objectives.at(best);
    if (Better(input.goal, value, current) || (value == current && key == input.default_key)) {
      best = key;
    }
  }
  return best;
}

std::optional<double> Gain(ObjectiveGoal goal, double best, double baseline) {
  const double gain = goal == ObjectiveGoal::kMin ? baseline / best : best / baseline;
  if (!std::isfinite(gain) || gain <= 0) return std::nullopt;
  return gain;
}

HostMatrix BuildMatrix(const ClusterInput& input, const std::string& key, bool is_winner,
                       const std::vector<Outlier>& outliers) {
  HostMatrix matrix;
  matrix.config_key = key;
  matrix.is_winner = is_winner;
  std::set<std::string> hosts;
  for (const LinkInput& link : input.links) {
    hosts.insert(link.client.host);
    hosts.insert(link.server.host);
  }
  if (hosts.size() > kMatrixMaxHosts) {
    matrix.omitted_hosts = hosts.size();
    return matrix;
  }
  matrix.hosts.assign(hosts.begin(), hosts.end());
  matrix.cells.assign(matrix.hosts.size(), std::vector<HostMatrix::Cell>(matrix.hosts.size()));
  const auto index_of = [&](const std::string& host) {
    return static_cast<size_t>(std::lower_bound(matrix.hosts.begin(), matrix.hosts.end(), host) -
                               matrix.hosts.begin());
  };
  for (size_t i = 0; i < input.links.size(); ++i) {
    const LinkInput& link = input.links[i];
    HostMatrix::Cell& cell = matrix.cells[index_of(link.client.host)][index_of(link.server.host)];
    ++cell.links;
    if (!link.ok) cell.failed = true;
    for (const Outlier& outlier : outliers) {
      if (outlier.link == i) cell.outlier = true;
    }
    if (!LinkUsable(link)) continue;
    const auto found = link.objectives.find(key);
    if (found == link.objectives.end()) continue;
    cell.value = cell.value ? Worse(input.goal, *cell.value, found->second) : found->second;
  }
  return matrix;
}

HostGrouping GroupHosts(const ClusterInput& input, const ClusterWinner& cluster_winner) {
  // Each host's class: every class its link ends name, so a host with two NIC
  // models is a class of its own ("mlx5+rxe").
  std::map<std::string, std::set<std::string>> classes_of_host;
  for (const LinkInput& link : input.links) {
    for (const LinkEnd* end : {&link.client, &link.server}) {
      std::set<std::string>& classes = classes_of_host[end->host];
      const std::string device_class = DeviceClass(end->device);
      if (!device_class.empty()) classes.insert(device_class);
    }
  }
  std::map<std::string, std::string> class_of_host;
  std::map<std::string, HostGroup> groups;
  const bool any_known = std::any_of(classes_of_host.begin(), classes_of_host.end(),
                                     [](const auto& entry) { return !entry.second.empty(); });
  for (const auto& [host, classes] : classes_of_host) {
    // A host whose device is not known (a rank that failed before it could say)
    // says nothing about NIC models: it must not split the cluster on its own.
    if (classes.empty() && any_known) continue;
    const std::string device_class = Join({classes.begin(), classes.end()}, "+");
    class_of_host[host] = device_class;
    HostGroup& group = groups[device_class];
    group.device_class = device_class;
    group.hosts.push_back(host);
  }
  HostGrouping grouping;
  if (groups.size() <= 1) {
    for (auto& [device_class, group] : groups) {
      for (size_t i = 0; i < input.links.size(); ++i) {
        if (LinkUsable(input.links[i])) group.links.push_back(i);
      }
      group.winner = cluster_winner;
      grouping.groups.push_back(std::move(group));
    }
    return grouping;
  }
  std::vector<std::string> descriptions;
  std::set<std::string> winners;
  for (auto& [device_class, group] : groups) {
    for (size_t i = 0; i < input.links.size(); ++i) {
      const LinkInput& link = input.links[i];
      if (LinkUsable(link) && class_of_host[link.client.host] == device_class &&
          class_of_host[link.server.host] == device_class) {
        group.links.push_back(i);
      }
    }
    group.winner = ChooseClusterWinner(input, group.links);
    if (group.winner.winner) winners.insert(group.winner.winner->key);
    descriptions.push_back(Join(group.hosts, ", ") + " (" +
                           (device_class.empty() ? "unknown devices" : device_class) + ")");
    grouping.groups.push_back(std::move(group));
  }
  grouping.winners_differ = winners.size() > 1;
  grouping.reason = "the hosts have different devices: " + Join(descriptions, "; ") + "; " +
                    (grouping.winners_differ
                         ? "the links within each group chose different winners, so each group "
                           "gets its own config"
                         : "the links within each group chose the same winner, so one config "
                           "serves every host");
  return grouping;
}

}  // namespace

std::string_view ClusterGoalName(ClusterGoal goal) {
  switch (goal) {
    case ClusterGoal::kWorstLink:
      return "worst-link";
    case ClusterGoal::kGeomean:
      return "geomean";
  }
  return "worst-link";
}

std::optional<ClusterGoal> ParseClusterGoal(std::string_view text) {
  for (ClusterGoal goal : {ClusterGoal::kWorstLink, ClusterGoal::kGeomean}) {
    if (text == ClusterGoalName(goal)) return goal;
  }
  return std::nullopt;
}

std::string FormatDeviations(double deviations) {
  char text[32];
  const bool looks_at_threshold = std::round(deviations * 10) / 10 <= kOutlierDeviations;
  std::snprintf(text, sizeof text, looks_at_threshold ? "%.2f" : "%.1f", deviations);
  return text;
}

ObjectiveRange MatrixRange(const HostMatrix& matrix, ObjectiveGoal goal) {
  ObjectiveRange range;
  for (const auto& row : matrix.cells) {
    for (const auto& cell : row) {
      if (!cell.value) continue;
      if (!range.best || Better(goal, *cell.value, *range.best)) range.best = cell.value;
      if (!range.worst || Better(goal, *range.worst, *cell.value)) {
        range.worst = cell.value;
      }
    }
  }
  return range;
}

bool LinkUsable(const LinkInput& link) { return link.ok && !link.objectives.empty(); }

std::string DeviceClass(std::string_view device) {
  if (device.starts_with("tcp:") || device == "tcp") return "tcp";
  size_t end = device.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(device[end - 1])) != 0) --end;
  if (end == device.size()) return std::string(device);
  if (end > 0 && device[end - 1] == '_') --end;
  if (end == 0) return std::string(device);  // all digits: nothing to strip to
  return std::string(device.substr(0, end));
}

ClusterWinner ChooseClusterWinner(const ClusterInput& input, const std::vector<size_t>& links) {
  ClusterWinner result;
  std::vector<size_t> usable;
  for (size_t index : links) {
    if (index < input.links.size() && LinkUsable(input.links[index])) usable.push_back(index);
  }
  if (usable.empty()) {
    result.reason = "no link was measured with a validated config, so there is no winner";
    return result;
  }
  // The configs every usable link measured: a config missing on one link says
  // nothing about that link, and the cluster must not wait on an unmeasured one.
  std::map<std::string, double> common = input.links[usable.front()].objectives;
  for (size_t index : usable) {
    const auto& objectives = input.links[index].objectives;
    std::erase_if(common, [&](const auto& entry) { return objectives.count(entry.first) == 0; });
  }
  for (const auto& [key, unused] : common) {
    ConfigScore score;
    score.key = key;
    double log_sum = 0;
    score.geomean_ok = true;
    bool first = true;
    for (size_t index : usable) {
      const double value = input.links[index].objectives.at(key);
      if (first || Better(input.goal, score.worst, value)) {
        score.worst = value;
        score.worst_link = index;
      }
      first = false;
      if (value > 0) {
        log_sum += std::log(value);
      } else {
        score.geomean_ok = false;
      }
    }
    score.geomean = score.geomean_ok ? std::exp(log_sum / static_cast<double>(usable.size())) : 0.0;
    // A geometric mean needs positive values; a config with a zero or negative
    // objective on some link cannot be ranked by it.
    if (input.cluster_goal == ClusterGoal::kGeomean && !score.geomean_ok) continue;
    score.score = input.cluster_goal == ClusterGoal::kGeomean ? score.geomean : score.worst;
    if (key == input.default_key) result.default_score = score;
    result.candidates.push_back(std::move(score));
  }
  std::sort(result.candidates.begin(), result.candidates.end(),
            [&](const ConfigScore& a, const ConfigScore& b) { return RanksBefore(input, a, b); });
  if (result.candidates.empty()) {
    result.reason = "no config was measured (validated) on every one of the " +
                    LinkCount(usable.size()) + ", so no config can be compared across them";
    return result;
  }
  result.winner = result.candidates.front();
  const size_t count = result.candidates.size();
  result.reason = std::string(input.cluster_goal == ClusterGoal::kGeomean
                                  ? "the best geometric mean over the links"
                                  : "the best worst link") +
                  " of the " + std::to_string(count) + (count == 1 ? " config" : " configs") +
                  " measured on all " + LinkCount(usable.size());
  return result;
}

OutlierScale OutlierScaleOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const double median = QuantileOfSorted(values, 0.5);
  for (double& value : values) value = std::fabs(value - median);
  std::sort(values.begin(), values.end());
  const double mad = QuantileOfSorted(values, 0.5);
  return {median, std::max(kMadToSigma * mad, kOutlierFloor * std::fabs(median))};
}

std::vector<Outlier> FindOutliers(const ClusterInput& input, const std::string& config_key) {
  std::vector<std::pair<size_t, double>> measured;
  for (size_t i = 0; i < input.links.size(); ++i) {
    const LinkInput& link = input.links[i];
    if (!LinkUsable(link)) continue;
    const auto found = link.objectives.find(config_key);
    if (found != link.objectives.end()) measured.push_back({i, found->second});
  }
  if (measured.size() < kOutlierMinLinks) return {};
  std::vector<double> values;
  for (const auto& [index, value] : measured) values.push_back(value);
  const auto [median, scale] = OutlierScaleOf(std::move(values));
  if (!(scale > 0)) return {};  // every value 0: nothing has a scale to stand out on
  std::vector<Outlier> outliers;
  for (const auto& [index, value] : measured) {
    const double worse_by = input.goal == ObjectiveGoal::kMin ? value - median : median - value;
    const double deviations_away = worse_by / scale;
    if (deviations_away > kOutlierDeviations) {
      outliers.push_back({.link = index,
                          .config_key = config_key,
                          .objective = value,
                          .median = median,
                          .scale = scale,
                          .deviations = deviations_away});
    }
  }
  return outliers;
}

ClusterAnalysis AnalyzeCluster(const ClusterInput& input) {
  ClusterAnalysis analysis;
  std::vector<size_t> every_link;
  for (size_t i = 0; i < input.links.size(); ++i) {
    every_link.push_back(i);
    if (LinkUsable(input.links[i])) ++analysis.usable_links;
    if (!input.links[i].ok) ++analysis.failed_links;
  }
  analysis.winner = ChooseClusterWinner(input, every_link);
  const std::optional<ConfigScore>& winner = analysis.winner.winner;

  for (size_t i = 0; i < input.links.size(); ++i) {
    const LinkInput& link = input.links[i];
    LinkRow row;
    row.link = i;
    if (LinkUsable(link)) {
      row.best_key = BestKeyOfLink(input, link);
      row.best_objective = link.objectives.at(row.best_key);
      const auto found_default = link.objectives.find(input.default_key);
      if (found_default != link.objectives.end()) {
        row.default_objective = found_default->second;
        row.gain = Gain(input.goal, row.best_objective, found_default->second);
      }
      if (winner) {
        const auto found_winner = link.objectives.find(winner->key);
        if (found_winner != link.objectives.end()) row.winner_objective = found_winner->second;
      }
    }
    analysis.rows.push_back(std::move(row));
  }

  // The heatmap and the outliers look at one config, so that links are compared
  // like with like: the one the cluster would run (the winner), else the default.
  std::string matrix_key;
  if (winner) {
    matrix_key = winner->key;
  } else if (!input.default_key.empty()) {
    matrix_key = input.default_key;
  }
  if (!matrix_key.empty()) analysis.outliers = FindOutliers(input, matrix_key);
  analysis.matrix = BuildMatrix(input, matrix_key, winner.has_value(), analysis.outliers);
  analysis.grouping = GroupHosts(input, analysis.winner);
  return analysis;
}

}  // namespace artune::tuner
