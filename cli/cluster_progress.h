// What rank 0 of `artune sweep --mpi` says while the cluster run goes on (one line
// per stored link and per round on stderr, unless --quiet) and at its end (the
// links as a table, or one JSON object with --json). No MPI here.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "artune/cluster/cluster_wire.h"
#include "artune/cluster/pair_schedule.h"
#include "artune/db/store.h"

namespace artune::cli {

class ClusterProgress {
 public:
  // `speak`: print progress on stderr (rank 0 without --quiet).
  ClusterProgress(bool speak, int64_t cluster_id, std::string measurement,
                  const tuner::PairSchedule& schedule, size_t stored_before);

  // A link of the schedule the store already had (--resume): not measured again.
  void Skipped() { ++resumed_; }
  // A link measured now and stored as `stored`, measured in report.seconds.
  void Stored(const LinkReport& report, const db::ClusterLinkRecord& stored);
  void RoundDone(size_t round, double seconds);

  // Prints the run's links (read back from `store`) and returns kUnavailable when
  // some link failed (each is stored with its error), else Ok.
  Status Finish(bool json, db::Store& store);

 private:
  bool speak_;
  int64_t cluster_id_;
  std::string measurement_;
  const tuner::PairSchedule& schedule_;
  size_t resumed_ = 0, measured_ = 0, failed_ = 0;
  std::vector<double> round_seconds_;
  std::map<std::pair<uint32_t, uint32_t>, double> link_seconds_;  // (client, server)
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace artune::cli
