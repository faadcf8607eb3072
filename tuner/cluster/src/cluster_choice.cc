#include "artune/cluster/cluster_choice.h"

#include <cctype>
#include <filesystem>
#include <vector>

#include "artune/base/number_text.h"

namespace artune::tuner {

std::string KnobKeyText(const std::string& key) {
  const auto knobs = db::ParseTrialKnobKey(key);
  if (!knobs.ok()) return key;
  std::string text;
  for (const auto& [name, value] : *knobs) text += (text.empty() ? "" : " ") + name + "=" + value;
  return text;
}

namespace {

std::string Joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : ", ") + word;
  return text;
}

}  // namespace

Result<ClusterChoice> ReadClusterChoice(db::Store& store, int64_t cluster_id, ClusterGoal goal) {
  ClusterChoice choice;
  ARTUNE_ASSIGN_OR_RETURN(choice.data, ReadClusterData(store, cluster_id, goal));
  choice.analysis = AnalyzeCluster(choice.data.input);
  const std::string name = "cluster " + std::to_string(cluster_id);
  const std::string goal_name(ClusterGoalName(goal));
  const auto knobs_of = [&](const std::string& key) -> Result<std::map<std::string, std::string>> {
    auto knobs = db::ParseTrialKnobKey(key);
    if (!knobs.ok()) {
      return Status::Corruption(name + "'s winner '" + key + "' is not knob text (" +
                                knobs.status().message() + ")");
    }
    return *knobs;
  };
  const auto& winner = choice.analysis.winner.winner;
  const auto describe = [&](const ConfigScore& score, size_t links) {
    return "worst link " + FormatNumber(score.worst, 2) + " " + choice.data.objective + ", " +
           std::to_string(links) + (links == 1 ? " link" : " links");
  };
  if (choice.analysis.grouping.winners_differ) {
    for (const HostGroup& group : choice.analysis.grouping.groups) {
      ClusterChoice::Part part;
      part.device_class = group.device_class.empty() ? "unknown" : group.device_class;
      part.hosts = group.hosts;
      const std::string hosts = "hosts " + Joined(group.hosts) + " (" + part.device_class + ")";
      if (group.winner.winner) {
        ARTUNE_ASSIGN_OR_RETURN(part.knobs, knobs_of(group.winner.winner->key));
        part.origin = name + " " + hosts + ": their links' winner by " + goal_name + " (" +
                      describe(*group.winner.winner, group.links.size()) + ")";
      } else if (winner) {
        ARTUNE_ASSIGN_OR_RETURN(part.knobs, knobs_of(winner->key));
        part.origin = name + " " + hosts + ": the cluster's winner by " + goal_name +
                      " (no link within the group was measured)";
      } else {
        return Status::NotFound(name + ": " + hosts + " have no winner (" + group.winner.reason +
                                "); see `artune results --cluster " + std::to_string(cluster_id) +
                                "`");
      }
      choice.parts.push_back(std::move(part));
    }
    return choice;
  }
  if (!winner) {
    return Status::NotFound(name + " has no winner to apply: " + choice.analysis.winner.reason +
                            "; see `artune results --cluster " + std::to_string(cluster_id) + "`");
  }
  ClusterChoice::Part part;
  part.hosts = choice.analysis.matrix.hosts;
  ARTUNE_ASSIGN_OR_RETURN(part.knobs, knobs_of(winner->key));
  part.origin = name + " winner by " + goal_name + " for every host (" +
                describe(*winner, choice.analysis.usable_links) + ", " + choice.data.cluster.pairs +
                " pairs, " + choice.data.cluster.created_at + ")";
  choice.parts.push_back(std::move(part));
  return choice;
}

std::string HostList(const std::vector<std::string>& hosts) {
  std::string text;
  for (const std::string& host : hosts) text += (text.empty() ? "" : ", ") + host;
  return text;
}

std::string GroupConfigPath(const std::string& base_path, const std::string& device_class) {
  std::string label = device_class;
  for (char& c : label) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '+';
    if (!plain) c = '_';
  }
  const std::filesystem::path base(base_path);
  std::filesystem::path named = base.parent_path();
  named /= base.stem().string() + "." + label + base.extension().string();
  return named.string();
}

Result<GroupConfig> ProposeGroupConfig(const ClusterChoice::Part& part,
                                       const std::vector<KnobSetting>& extra_settings,
                                       ConfigFormat format, const std::string& base_path,
                                       const transport::LoadedConfig& in_force) {
  GroupConfig group;
  std::vector<KnobSetting> settings;
  for (const auto& [name, value] : part.knobs) settings.push_back({name, value, part.origin});
  settings.insert(settings.end(), extra_settings.begin(), extra_settings.end());
  ARTUNE_ASSIGN_OR_RETURN(group.proposed, ApplyKnobSettings(in_force.config, settings));
  group.changes = DiffConfigs(in_force.config, in_force.sources, group.proposed);
  group.for_hosts = "for hosts " + HostList(part.hosts) + " (" + part.device_class + ")";
  const std::vector<std::string> header = {
      "artune transport config, written by `artune apply config`", group.for_hosts, part.origin};
  group.text = RenderConfig(group.proposed, format, header);
  group.path = base_path.empty() ? "" : GroupConfigPath(base_path, part.device_class);
  return group;
}

}  // namespace artune::tuner
