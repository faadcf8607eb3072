// A cluster run as scripts and people read it: the JSON shape of `artune results
// --cluster ID --json` (and of each run in `--clusters --json`), the sentences that
// name a link and an outlier, which that JSON carries and the CLI's text prints
// alike, and the links with their verdicts that `artune sweep --mpi` ends with.
// Pure functions over ClusterData and its analysis, but ReadLinkVerdicts (the
// store's threading).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "artune/cluster/cluster_analysis.h"
#include "artune/cluster/cluster_records.h"
#include "artune/db/store.h"
#include "artune/status.h"

namespace artune::tuner {

// "a ↔ b": the two hosts of a link.
std::string LinkHosts(const db::ClusterLinkRecord& link);

// The worse direction of the objective: "slower" for a minimised one, "lower" for a
// maximised one (a throughput).
std::string WorseWord(const ClusterData& data);

// "look at the link a ↔ b: 3.8 MAD slower than the median under the winner
// (12.0 against 8.05)".
std::string OutlierSentence(const ClusterData& data, const ClusterAnalysis& analysis,
                            const Outlier& outlier);

// id, created_at, finished_at, ranks, pairs, measurement, parameters.
nlohmann::ordered_json ClusterRecordJson(const db::ClusterRecord& cluster);

// cluster (ClusterRecordJson), objective, goal, cluster_goal, default,
// usable_links, failed_links, links (ends, status, error, sweep_id, best,
// default_objective, gain, winner_objective, outlier), winner, winner_reason,
// default_score, candidates, heatmap, outliers (with their OutlierSentence as
// "message"), host_groups, failed.
nlohmann::ordered_json ClusterAnalysisJson(const ClusterData& data,
                                           const ClusterAnalysis& analysis);

// A stored link of a cluster run with its sweep's verdict (nullopt without a sweep,
// a failed link's, or without a verdict).
struct LinkVerdict {
  db::ClusterLinkRecord link;
  std::optional<db::SweepVerdict> verdict;
};

// Cluster `cluster_id`'s links in stored order, each with its sweep's verdict.
// Errors: the store's (kNotFound for a link naming a sweep the store lacks).
Result<std::vector<LinkVerdict>> ReadLinkVerdicts(db::Store& store, int64_t cluster_id);

// What every cluster run's JSON says of a link first, whatever measured it:
// round, pair, client_rank, client_host, client_device, server_rank,
// server_host, server_device, status, error.
nlohmann::ordered_json LinkEndsJson(const db::ClusterLinkRecord& link);

// One link as `artune sweep --mpi --json` lists it: round, pair, client_rank,
// client_host, client_device, server_rank, server_host, server_device, status,
// error, sweep_id, verdict, winner (the verdict's best_knobs), seconds (null when
// not measured by this run) and measured_now.
nlohmann::ordered_json RunLinkJson(const LinkVerdict& link, std::optional<double> seconds);

}  // namespace artune::tuner
