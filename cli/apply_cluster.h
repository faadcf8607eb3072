// `artune apply config --cluster ID` when the hosts of a cluster run need different
// configs (artune/cluster/cluster_choice.h: ClusterChoice with one part per host group): one config
// per group, each in a file named after the group's devices beside the target
// ("transport.toml" -> "transport.mlx5.toml"), or all of them in one JSON object on
// stdout, each saying which hosts it is for. One config for the whole cluster goes
// the ordinary way (apply_cmd.cc), like a sweep's winner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artune/cluster/cluster_choice.h"
#include "artune/status.h"
#include "artune/transport/config_loader.h"

#include "artune/tuner/config_emit.h"

namespace artune::cli {

struct ClusterGroupsApply {
  int64_t cluster_id = 0;
  std::string reason;  // why the hosts were split (HostGrouping::reason)
  std::vector<tuner::ClusterChoice::Part> parts;
  std::vector<tuner::KnobSetting> extra_settings;  // --set, laid over every group's winner
  tuner::ConfigFormat format = tuner::ConfigFormat::kToml;
  // The file the groups' files are named after; "" prints to stdout (json only: one
  // object; toml or env files would override each other when concatenated).
  std::string base_path;
  bool base_is_default = false;  // base_path is the transport's default file
  bool dry_run = false;
  bool json = false;  // the report as one JSON object
};

// Writes (or prints) one config per group over `in_force`, shows each diff, and says
// on stderr which file is for which hosts. Errors: kInvalidArgument (stdout in toml
// or env), the knob table's refusals, WriteFileAtomically's.
Status ApplyClusterGroups(const ClusterGroupsApply& request,
                          const transport::LoadedConfig& in_force);

}  // namespace artune::cli
