// artune apply config: hand a tuned config to the transport. The knob values come
// from a stored sweep's winner (the config its verdict chose, else its best trial),
// or a cluster run's winner (one per host group where the groups chose differently:
// apply_cluster.h), or a prediction's best, and/or --set NAME=VALUE
// (artune/cluster/config_proposal.h gathers them); they are laid over
// the config in force, checked by the knob table, shown as a diff against what is
// in force (value and source), and then
//   written as TOML to the file the transport loads at start-up (atomically), or
//   written to --output PATH, or printed in --format toml|env|json, or
//   pushed to a running `artune serve` through the control plane (--live ADDR).
// Thin over artune/tuner/config_emit.h.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apply_cluster.h"
#include "apply_compare.h"
#include "artune/cluster/cluster_choice.h"
#include "artune/cluster/config_proposal.h"
#include "artune/db/store.h"
#include "artune/report/config_text.h"
#include "artune/transport/config_loader.h"
#include "artune/transport/knobs.h"
#include "artune/transport/transport.h"
#include "artune/tuner/config_emit.h"
#include "artune/tuner/sweep_choice.h"
#include "command.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;
using transport::Config;

struct ApplyFlags {
  tuner::ProposalRequest request;  // --sweep, --cluster, --prediction, --goal, --set
  std::string output;
  std::string format;  // empty: toml to the file
  std::string live;
  bool dry_run = false;
  bool json = false;
};

// Where the config goes.
enum class Target { kDefaultFile, kOutputFile, kStdout, kLive };

Result<Target> ChooseTarget(const ApplyFlags& flags) {
  if (!flags.live.empty()) {
    if (!flags.output.empty() || !flags.format.empty()) {
      return Status::InvalidArgument(
          "--live pushes the config to a server; it cannot be combined with --output or "
          "--format (run apply twice to do both)");
    }
    return Target::kLive;
  }
  if (flags.output == "-") return Target::kStdout;
  if (!flags.output.empty()) return Target::kOutputFile;
  if (!flags.format.empty()) return Target::kStdout;
  return Target::kDefaultFile;
}

Status ApplyLive(const ApplyFlags& flags, const tuner::ConfigProposal& proposal) {
  ARTUNE_RETURN_IF_ERROR(tuner::CheckLiveSettings(proposal.settings));
  // The handshake returns the server's config (its values win), which is the base.
  auto client = transport::Client::Connect(Config{}, flags.live);
  if (!client.ok()) {
    return client.status().WithContext("cannot reach `artune serve` or `artune relay` at " +
                                       flags.live);
  }
  const Config in_force = (*client)->config();
  ARTUNE_ASSIGN_OR_RETURN(Config proposed, tuner::ApplyKnobSettings(in_force, proposal.settings));
  const auto changes = tuner::DiffConfigs(in_force, {}, proposed, "server " + flags.live);
  if (!flags.dry_run) {
    ARTUNE_RETURN_IF_ERROR(
        (*client)->Reconfigure(proposed).WithContext("live apply to " + flags.live));
  }
  const Config agreed = flags.dry_run ? in_force : (*client)->config();
  if (flags.json) {
    ordered_json out;
    out["target"] = "live";
    out["address"] = flags.live;
    out["sweep_id"] = proposal.sweep_id ? ordered_json(*proposal.sweep_id) : ordered_json();
    out["verdict"] = proposal.verdict.empty() ? ordered_json() : ordered_json(proposal.verdict);
    out["winner"] = tuner::ProposalWinnerJson(proposal);
    out["busy_polling_measured_idle"] = !proposal.idle_busy_polling_warning.empty();
    out["applied"] = !flags.dry_run;
    out["changes"] = tuner::KnobChangesJson(changes);
    out["config"] = transport::ConfigToMap(agreed);
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  report::PrintKnobChanges(changes, "SERVER", std::cout);
  std::cout << (flags.dry_run ? "dry run: nothing pushed to " : "pushed live to ") << flags.live
            << (flags.dry_run ? "" : "; new messages use it, calls in flight finish as before")
            << "\n";
  return Status::Ok();
}

// A cluster whose host groups need different configs: one file per group
// (apply_cluster.h).
Status ApplyProposalGroups(const ApplyFlags& flags, const tuner::ConfigProposal& proposal,
                           Target target, tuner::ConfigFormat format,
                           const transport::LoadedConfig& in_force) {
  ClusterGroupsApply groups;
  groups.cluster_id = *proposal.cluster_id;
  groups.reason = proposal.cluster_groups_reason;
  groups.parts = proposal.cluster_groups;
  groups.extra_settings = proposal.settings;
  groups.format = format;
  if (target == Target::kDefaultFile) {
    ARTUNE_ASSIGN_OR_RETURN(groups.base_path, tuner::DefaultConfigPathOrError());
  } else if (target == Target::kOutputFile) {
    groups.base_path = flags.output;
  }
  groups.base_is_default = target == Target::kDefaultFile;
  groups.dry_run = flags.dry_run;
  groups.json = flags.json;
  return ApplyClusterGroups(groups, in_force);
}

Status ApplyConfig(const ApplyFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(const Target target, ChooseTarget(flags));
  tuner::ConfigFormat format = tuner::ConfigFormat::kToml;
  if (!flags.format.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(format, tuner::ParseConfigFormat(flags.format));
  }
  if (target == Target::kStdout && flags.json) {
    return Status::InvalidArgument(
        "--json and --format both print to stdout; add --output FILE to write the config");
  }
  ARTUNE_ASSIGN_OR_RETURN(
      const tuner::ConfigProposal proposal,
      tuner::ProposeConfig(flags.request, [&context] { return OpenStoreForReading(context); }));
  for (const std::string* warning :
       {&proposal.verdict_warning, &proposal.idle_busy_polling_warning}) {
    if (!warning->empty()) std::cerr << "artune: warning: " << *warning << "\n";
  }
  if (target == Target::kLive && !proposal.cluster_groups.empty()) {
    return Status::InvalidArgument("--live: the hosts of cluster " +
                                   std::to_string(*proposal.cluster_id) +
                                   " need different configs (" + proposal.cluster_groups_reason +
                                   "); write them with --output FILE and load each on its hosts");
  }
  if (target == Target::kLive) return ApplyLive(flags, proposal);

  ARTUNE_ASSIGN_OR_RETURN(const transport::LoadedConfig in_force, tuner::LoadConfigInForce());
  if (!proposal.cluster_groups.empty()) {
    return ApplyProposalGroups(flags, proposal, target, format, in_force);
  }
  ARTUNE_ASSIGN_OR_RETURN(const Config proposed,
                          tuner::ApplyKnobSettings(in_force.config, proposal.settings));
  const auto changes = tuner::DiffConfigs(in_force.config, in_force.sources, proposed);

  std::string path;
  if (target == Target::kDefaultFile) {
    ARTUNE_ASSIGN_OR_RETURN(path, tuner::DefaultConfigPathOrError());
  } else if (target == Target::kOutputFile) {
    path = flags.output;
  }
  std::vector<std::string> header = {"artune transport config, written by `artune apply config`"};
  header.insert(header.end(), proposal.origin_lines.begin(), proposal.origin_lines.end());
  const std::string text = tuner::RenderConfig(proposed, format, header);

  const bool writing = !path.empty() && !flags.dry_run;
  if (writing) ARTUNE_RETURN_IF_ERROR(tuner::WriteFileAtomically(path, text));
  const std::vector<std::string> warnings = target == Target::kDefaultFile
                                                ? tuner::EnvironmentShadows(changes, in_force)
                                                : std::vector<std::string>{};

  // The report goes to stdout, unless stdout carries the config itself.
  std::ostream& report = target == Target::kStdout ? std::cerr : std::cout;
  if (target == Target::kStdout && !flags.dry_run) std::cout << text;
  if (flags.json) {
    ordered_json out;
    out["target"] = target == Target::kDefaultFile ? "default-file" : "file";
    out["path"] = path;
    out["format"] = std::string(tuner::ConfigFormatName(format));
    tuner::AddProposalJson(out, proposal);
    out["written"] = writing;
    out["in_force_file"] =
        in_force.file_path.empty() ? ordered_json() : ordered_json(in_force.file_path);
    out["changes"] = tuner::KnobChangesJson(changes);
    out["config"] = transport::ConfigToMap(proposed);
    tuner::AddProposalWarningsJson(out, proposal, warnings);
    std::cout << out.dump(2) << "\n";
  } else if (!context.globals.quiet || target != Target::kStdout) {
    for (const std::string& line : proposal.origin_lines) report << "from " << line << "\n";
    report << "config in force: " << (in_force.file_path.empty() ? "(no file)" : in_force.file_path)
           << "\n\n";
    report::PrintKnobChanges(changes, "IN FORCE", report);
    if (writing) {
      report << "wrote " << path << " (" << tuner::ConfigFormatName(format) << ")\n";
    } else if (flags.dry_run) {
      report << "dry run: nothing written\n";
    }
  }
  for (const std::string& warning : warnings) std::cerr << "artune: warning: " << warning << "\n";
  return Status::Ok();
}

}  // namespace

void RegisterApply(CLI::App& root, Context& context) {
  CLI::App* apply = root.add_subcommand(
      "apply",
      "Hand a tuned config to the transport (file, env, live), or compare it with the defaults");
  apply->require_subcommand(1);
  auto flags = std::make_shared<ApplyFlags>();
  CLI::App* command = apply->add_subcommand(
      "config",
      "Write the winner of a sweep (or --set values) as the transport's config, showing "
      "the diff against the config in force");
  auto* sweep =
      command->add_option("--sweep", flags->request.sweep_id,
                          "Sweep whose winner to apply: the config its verdict chose at its final "
                          "re-measurement, else its best validated trial (default: the latest "
                          "sweep, unless only --set or --cluster is given)");
  auto* cluster =
      command
          ->add_option("--cluster", flags->request.cluster_id,
                       "Cluster run whose winner to apply (`artune results --cluster ID`); where "
                       "hosts with different devices chose different winners, one config per host "
                       "group, in files named after the group's devices beside the target")
          ->excludes(sweep);
  command
      ->add_option("--prediction", flags->request.prediction_id,
                   "Prediction whose best config to apply (`artune predict` prints its ID)")
      ->excludes(sweep)
      ->excludes(cluster);
  command
      ->add_option("--goal", flags->request.goal,
                   "With --cluster: worst-link (the config whose worst link is best) or "
                   "geomean (the best geometric mean over the links)")
      ->check(CLI::IsMember({"worst-link", "geomean"}))
      ->capture_default_str()
      ->needs(cluster);
  command
      ->add_option("--set", flags->request.settings,
                   "Set a knob, e.g. --set eager_threshold=4KiB (repeatable; applied after the "
                   "sweep's winner). A value the knob table refuses exits with code 2")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  command
      ->add_option("--output", flags->output,
                   "Write to FILE instead of the default path ('-' for stdout)")
      ->type_name("FILE");
  command
      ->add_option("--format", flags->format,
                   "toml (the transport's file), env (export ARTUNE_<KNOB>=... lines) or json; "
                   "without --output the config goes to stdout and the diff to stderr")
      ->check(CLI::IsMember({"toml", "env", "json"}));
  command
      ->add_option("--live", flags->live,
                   "Push the config to a running `artune serve` or `artune relay` at HOST:PORT "
                   "(its embedded transport's control plane): new messages use it at once, "
                   "calls in flight finish under the old values. A relay's knobs act on both "
                   "directions of the connections it carries: apply to the relay beside the "
                   "program's server (the one `artune run` dials), not to `artune run`. "
                   "Beyond loopback it needs the server's token (ARTUNE_TOKEN_FILE)")
      ->check(HostPortValidator())
      ->type_name("HOST:PORT");
  command->add_flag("--dry-run", flags->dry_run, "Show the diff; write or push nothing");
  command->add_flag("--json", flags->json, "Print the report as one JSON object");
  command->footer(
      "The default path is the one the transport loads at start-up: $ARTUNE_CONFIG if set, "
      "else $XDG_CONFIG_HOME/artune/transport.toml (XDG_CONFIG_HOME defaults to "
      "~/.config). The file is replaced atomically (temporary file + rename), so a killed "
      "apply never leaves a half-written config. ARTUNE_<KNOB> variables still override the "
      "file; apply warns when one shadows a knob it changes.\n"
      "Examples:\n"
      "  artune apply config                       # the latest sweep's winner\n"
      "  artune apply config --sweep 3 --dry-run\n"
      "  artune apply config --cluster 2 --output cluster.toml\n"
      "  artune apply config --set eager_threshold=4KiB --set chunk_size=1MiB\n"
      "  eval \"$(artune apply config --format env)\"\n"
      "  artune apply config --sweep 3 --live 10.0.0.2:50051\n"
      "  artune apply config --set eager_threshold=256KiB --live 10.0.0.5:50061   # a relay");
  command->callback([flags, &context] {
    RunCommand(context, [&]() -> Status { return ApplyConfig(*flags, context); });
  });
  AddApplyCompare(*apply, context);
}

}  // namespace artune::cli
