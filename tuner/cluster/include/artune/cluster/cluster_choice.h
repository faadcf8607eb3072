// What a stored cluster run hands on (`artune apply config --cluster ID`): the
// cluster's winner for every host, or one config per host group when hosts with
// different devices chose different winners. The sweep's counterpart is
// artune/tuner/sweep_choice.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_records.h"
#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config_loader.h"
#include "artune/tuner/config_emit.h"

namespace artune::tuner {

// "eager_threshold=4KiB chunk_size=1MiB" from TrialKnobKey text (the key itself when
// it does not parse).
std::string KnobKeyText(const std::string& key);

// What a stored cluster run hands on (`artune apply config --cluster ID`): its
// winner (artune/cluster/cluster_analysis.h) for every host, or, when hosts with different
// devices chose different winners within their groups, one config per group.
struct ClusterChoice {
  struct Part {
    std::string device_class;        // "" for the whole cluster, else the group's ("mlx5")
    std::vector<std::string> hosts;  // the hosts it is for
    std::map<std::string, std::string> knobs;
    std::string origin;  // "cluster 3 winner by worst-link: ..." for the file's header
  };
  ClusterData data;
  ClusterAnalysis analysis;
  std::vector<Part> parts;  // one, or one per host group (device class order)
};

// Reads the cluster and chooses. A group without a winner of its own (no link
// within it) gets the cluster's. Errors: kNotFound (no such cluster, or no config
// measured on every usable link: the message says to look at `artune results
// --cluster ID`), kCorruption (a winner that is not knob text), ReadClusterData's.
Result<ClusterChoice> ReadClusterChoice(db::Store& store, int64_t cluster_id, ClusterGoal goal);

// "a, b, c": the hosts of a group, for messages.
std::string HostList(const std::vector<std::string>& hosts);

// "dir/transport.toml", "mlx5" -> "dir/transport.mlx5.toml" ("cfg" -> "cfg.mlx5");
// characters other than letters, digits, '_', '-' and '+' in the class become '_'.
std::string GroupConfigPath(const std::string& base_path, const std::string& device_class);

// One host group's config for `artune apply config --cluster ID`: the part's knobs,
// then `extra_settings` (--set), laid over the config in force.
struct GroupConfig {
  std::string for_hosts;  // "for hosts a, b (mlx5)"
  transport::Config proposed;
  std::vector<KnobChange> changes;  // against the config in force
  std::string text;                 // rendered in the format, with a header
  std::string path;                 // GroupConfigPath of base_path; "" when base_path is ""
};

// Errors: the knob table's refusals (ApplyKnobSettings).
Result<GroupConfig> ProposeGroupConfig(const ClusterChoice::Part& part,
                                       const std::vector<KnobSetting>& extra_settings,
                                       ConfigFormat format, const std::string& base_path,
                                       const transport::LoadedConfig& in_force);

}  // namespace artune::tuner
