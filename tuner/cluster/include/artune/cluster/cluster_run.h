// A cluster run (`artune sweep --mpi`): one rank per host (or device), started by
// mpirun or srun. Every rank serves the embedded transport on its own address; the
// ranks exchange addresses, hostnames and devices (MPI_Allgather) and walk the pair
// schedule (pair_schedule.h) round by round. In each pair the client rank runs the
// measurement (the sweep, or --ab's A/B) against its peer into a scratch store of
// its own, or measures the link's model (--strategy model: cluster_model.h), then
// sends the finished link (cluster_wire.h) to rank 0, the only rank that opens the
// store, which writes it at once. A barrier ends each round.
//
// Faults: a pair whose peer cannot be reached or whose measurement fails is stored
// as a failed link and the run goes on. A rank that cannot go on while the others
// wait for it (a broken MPI call, a link rank 0 cannot store) says why on stderr
// and ends the job (MPI_Abort); `resume` then measures only what the run lacks.
//
// Built only with MPI (ARTUNE_HAVE_MPI); every rank calls RunCluster once, from the
// thread that is to make the MPI calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_wire.h"
#include "artune/cluster/pair_schedule.h"
#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config_loader.h"
#include "artune/tuner/sweep_plan.h"

namespace artune::cluster {

// What the run tells its caller as it goes on: called on rank 0 only, on the thread
// that called RunCluster, in the order below.
class ClusterRunObserver {
 public:
  virtual ~ClusterRunObserver() = default;
  // The run is set up: its id, its measurement ("sweep", "ab" or "model"), its schedule
  // (alive until RunCluster returns) and the links stored before (`resume`).
  virtual void Began(int64_t cluster_id, const std::string& measurement,
                     const tuner::PairSchedule& schedule, size_t stored_before) = 0;
  // A link of the schedule the store already had: not measured again.
  virtual void Skipped() = 0;
  // A link measured now and stored as `stored`, measured in report.seconds.
  virtual void Stored(const LinkReport& report, const db::ClusterLinkRecord& stored) = 0;
  virtual void RoundDone(size_t round, double seconds) = 0;
  // Every link is stored and the run marked finished in `store`: what rank 0's
  // RunCluster returns (the caller's verdict on the links, e.g. kUnavailable when
  // some failed).
  virtual Status Finished(db::Store& store) = 0;
};

struct ClusterRunRequest {
  std::string db_path;  // rank 0's store; "" is the store's default path
  // This rank's transport config as its command line gives it: called by rank 0
  // for a new run and by every rank as it starts (a rank that cannot load it
  // takes part with failed links).
  std::function<Result<transport::LoadedConfig>()> load_config;
  std::string fabric;  // for a new run, over the config's; "" keeps the config's
  tuner::SweepPlan plan;
  int64_t resume = 0;     // a stored cluster run to complete; 0 starts a new one
  std::string ab_config;  // a TOML file: the A/B measurement instead of the sweep
  // With plan.strategy "model" (cluster_model.h): each link measures its link
  // model in about this many seconds instead of sweeping.
  double model_budget_s = tuner::kDefaultLinkModelBudget;
  bool final_rounds_given = false;  // plan.final_rounds was given (else A/B sets its own)
  std::string pairs = "ring";       // pair_schedule.h: ring | all | random:K
  uint64_t pairs_seed = 1;
  std::string listen;  // host this rank's servers listen on; "": tuner::ClusterListenHost
  // The exit code of a rank that must end the job over `status`.
  std::function<int(const Status&)> exit_code_for;
};

// Runs (or resumes) the cluster run on this rank. Rank 0 returns the observer's
// Finished status, or the error that kept the run from starting (bad request,
// store, fewer than 2 ranks, MPI not started); the other ranks return Ok once the
// run is over, or the error that kept them from taking part.
Status RunCluster(const ClusterRunRequest& request, ClusterRunObserver& observer);

}  // namespace artune::cluster
