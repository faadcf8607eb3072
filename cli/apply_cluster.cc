#include "apply_cluster.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/transport/knobs.h"
#include "format.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

// One group's changed knobs as a table, and how many of them change.
void PrintGroupChanges(const std::string& origin, const std::string& for_hosts,
                       const std::vector<tuner::KnobChange>& changes, std::ostream& out) {
  out << "from " << origin << "\n";
  std::vector<std::vector<std::string>> rows = {{"KNOB", "IN FORCE", "SOURCE", "NEW", ""}};
  size_t changed = 0;
  for (const tuner::KnobChange& change : changes) {
    if (!change.changed) continue;
    rows.push_back(
        {change.name, change.current, change.current_source, change.proposed, "changed"});
    ++changed;
  }
  if (changed > 0) PrintTable(rows, {}, out);
  out << changed << " of " << changes.size() << " knobs change " << for_hosts << "\n";
}

// The closing line on stderr: where each group's config went and what to do with it.
void PrintGroupsPlaced(const ClusterGroupsApply& request, const std::vector<std::string>& placed) {
  const bool to_stdout = request.base_path.empty();
  const std::string cluster = "cluster " + std::to_string(request.cluster_id);
  std::string placed_text;
  for (const std::string& text : placed) placed_text += (placed_text.empty() ? "" : "; ") + text;
  std::cerr << "artune: " << cluster << ": " << request.reason << ": "
            << (request.dry_run ? "would write "
                : to_stdout     ? "printed "
                                : "wrote ")
            << request.parts.size() << " configs, " << placed_text;
  if (!to_stdout) {
    std::cerr << "; load each on its hosts (ARTUNE_CONFIG=FILE, or copy it to their "
                 "transport.toml)";
    if (request.base_is_default) {
      std::cerr << "; " << request.base_path << " itself is left as it is";
    }
  }
  std::cerr << "\n";
}

}  // namespace

Status ApplyClusterGroups(const ClusterGroupsApply& request,
                          const transport::LoadedConfig& in_force) {
  const bool to_stdout = request.base_path.empty();
  if (to_stdout && request.format != tuner::ConfigFormat::kJson) {
    return Status::InvalidArgument(
        "cluster " + std::to_string(request.cluster_id) + " needs one config per host group, and " +
        std::string(tuner::ConfigFormatName(request.format)) +
        " configs printed one after the other would override each other: give --output FILE "
        "(one file per group) or --format json");
  }
  ordered_json printed = {{"cluster_id", request.cluster_id}, {"groups", ordered_json::array()}};
  ordered_json report = {{"target", to_stdout ? "stdout" : "group-files"},
                         {"cluster_id", request.cluster_id},
                         {"reason", request.reason},
                         {"groups", ordered_json::array()}};
  std::ostream& out = to_stdout ? std::cerr : std::cout;
  std::vector<std::string> placed;
  for (const tuner::ClusterChoice::Part& part : request.parts) {
    ARTUNE_ASSIGN_OR_RETURN(
        const tuner::GroupConfig group,
        tuner::ProposeGroupConfig(part, request.extra_settings, request.format,
                                  to_stdout ? "" : request.base_path, in_force));
    const auto& [for_hosts, proposed, changes, text, path] = group;
    const bool writing = !path.empty() && !request.dry_run;
    if (writing) ARTUNE_RETURN_IF_ERROR(tuner::WriteFileAtomically(path, text));
    std::string knobs;
    for (const auto& [name, value] : part.knobs)
      knobs += (knobs.empty() ? "" : " ") + name + "=" + value;
    if (to_stdout) {
      printed["groups"].push_back({{"device_class", part.device_class},
                                   {"hosts", part.hosts},
                                   {"knobs", knobs},
                                   {"config", ordered_json::parse(text)}});
    }
    placed.push_back((to_stdout ? std::string("the \"") + part.device_class + "\" group" : path) +
                     " (for " + tuner::HostList(part.hosts) + ")");
    if (request.json) {
      report["groups"].push_back({{"device_class", part.device_class},
                                  {"hosts", part.hosts},
                                  {"knobs", knobs},
                                  {"origin", part.origin},
                                  {"path", path},
                                  {"written", writing},
                                  {"changes", tuner::KnobChangesJson(changes)},
                                  {"config", transport::ConfigToMap(proposed)}});
      continue;
    }
    PrintGroupChanges(part.origin, for_hosts, changes, out);
    if (writing) {
      out << "wrote " << path << " (" << tuner::ConfigFormatName(request.format) << ")\n";
    }
    out << "\n";
  }
  if (to_stdout && !request.dry_run) std::cout << printed.dump(2) << "\n";
  if (request.json) std::cout << report.dump(2) << "\n";
  PrintGroupsPlaced(request, placed);
  return Status::Ok();
}

}  // namespace artune::cli
