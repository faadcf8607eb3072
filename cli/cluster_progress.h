// What rank 0 of `artune sweep --mpi` says while the cluster run goes on (one line
// per stored link and per round on stderr, unless --quiet) and at its end (the
// links as a table, or one JSON object with --json). No MPI here: the run
// (artune/cluster/cluster_run.h) calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "artune/cluster/cluster_run.h"
#include "artune/cluster/cluster_wire.h"
#include "artune/cluster/pair_schedule.h"
#include "artune/db/store.h"

namespace artune::cli {

// Rank 0's observer of the cluster run.
class ClusterProgress : public cluster::ClusterRunObserver {
 public:
  // `speak`: print progress on stderr (not --quiet); `json`: the links at the end
  // as one JSON object instead of a table.
  ClusterProgress(bool speak, bool json) : speak_(speak), json_(json) {}

  void Began(int64_t cluster_id, const std::string& measurement,
             const tuner::PairSchedule& schedule, size_t stored_before) override;
  // A link of the schedule the store already had (--resume): not measured again.
  void Skipped() override { ++resumed_; }
  void Stored(const cluster::LinkReport& report, const db::ClusterLinkRecord& stored) override;
  void RoundDone(size_t round, double seconds) override;
  // Prints the run's links (read back from `store`) and returns kUnavailable when
  // some link failed (each is stored with its error), else Ok.
  Status Finished(db::Store& store) override;

 private:
  Status FinishedModels(db::Store& store);  // Finished of a "model" run

  bool speak_;
  bool json_;
  int64_t cluster_id_ = 0;
  std::string measurement_;
  const tuner::PairSchedule* schedule_ = nullptr;  // the run's, from Began on
  size_t resumed_ = 0, measured_ = 0, failed_ = 0;
  std::vector<double> round_seconds_;
  std::map<std::pair<uint32_t, uint32_t>, double> link_seconds_;  // (client, server)
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace artune::cli
