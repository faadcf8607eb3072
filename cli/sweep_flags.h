// The flags of `artune sweep`, shared by the single-link sweep (sweep_cmd.cc) and
// the cluster run under MPI (artune/cluster/cluster_run.h, built when MPI is found).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "artune/cluster/cluster_model.h"
#include "artune/tuner/sweep_plan.h"
#include "command.h"
#include "knob_flags.h"

namespace artune::cli {

struct SweepFlags {
  KnobFlags knobs;
  tuner::SweepPlan plan;  // what to search, over which workload, how to measure
  std::string fabric;     // empty: the config's (auto: verbs where a device exists)
  int64_t resume = 0;     // a sweep id; with --mpi, a cluster run's id
  bool json = false;
  bool final_rounds_given = false;  // --final-rounds on the command line
  // --background-load: N CPU hogs or "all"; parsed into plan.background_load.
  std::string background_load = "0";
  bool background_load_given = false;

  // --mpi: one rank per host (or device) under mpirun or srun.
  bool mpi = false;
  std::string pairs = "ring";  // pair_schedule.h: ring | all | random:K
  uint64_t pairs_seed = 1;     // random:K's matchings
  std::string listen;          // host this rank's servers listen on; "": ClusterListenHost
  std::string ab_config;       // --ab FILE: the A/B measurement instead of the sweep
  double model_budget_s = tuner::kDefaultLinkModelBudget;  // --strategy model, per link
  std::set<std::string> cluster_flags_given;               // which of the five above were given
};

// `artune sweep --mpi`: the cluster run (artune/cluster/cluster_run.h) over these
// flags, its progress and links printed by rank 0 (cluster_progress.h). A build
// without MPI (ARTUNE_HAVE_MPI 0) answers kUnavailable, saying how to build with MPI.
Status RunMpiSweepCommand(const SweepFlags& flags, Context& context);

}  // namespace artune::cli
