// Synthetic cluster runs written through the db::Store API, for the tests of
// `results --cluster`, `apply config --cluster`, `report --cluster` and the
// dashboard's sweep view.
//
// WriteTwoModelCluster: 5 ranks, hosts a and b on mlx5 NICs, c, d and e on
// Soft-RoCE (rxe); objective workload-time (min); configs eager_threshold 4KiB (X),
// 16KiB (the default) and 64KiB (Y). Links (round, pair):
//   (0,0) a -> b  default 10, X 5, Y 9      the mlx5 group's only link: X
//   (0,1) c -> d  default 10, X 9, Y 6      the rxe group's only link: Y
//   (1,0) a -> c  default 10, X 8, Y 6.5
//   (1,1) b -> d  default 20, X 16, Y 16    slow under every config: the outlier
//   (2,0) a -> d  default 10, X 8, Y 8
//   (2,1) b -> c  default 10, X 8, Y 8
//   (3,0) d -> e  failed: "peer 10.0.0.5:40000 did not answer"
// worst-link: X and Y both 16, X first by key; under X the median is 8 and the MAD
// 0.5 (0.74 scaled), so b -> d is 10.8 MADs slower. geomean: Y (359424^(1/6) < 368640^(1/6) of X).
//
// WriteOneModelCluster: 3 ranks p, q, r on tcp:eth0 in a ring, X best everywhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "artune/db/store.h"

namespace artune_cluster_test {

namespace db = artune::db;

inline constexpr const char* kDefaultKnobs = "eager_threshold=16KiB";

// A finished sweep for one link with one validated trial per value.
inline artune::Result<int64_t> WriteLinkSweep(db::Store& store, const std::string& client,
                                              const std::string& server,
                                              const std::map<std::string, double>& by_eager) {
  db::SweepRecord sweep;
  sweep.host = client;
  sweep.peer = server + ":40000";
  sweep.fabric = "verbs";
  sweep.objective = "workload-time";
  sweep.goal = "min";
  sweep.strategy = "grid";
  sweep.workload = "scheme:skew";
  sweep.search_space = "eager_threshold=4KiB,16KiB,64KiB";
  sweep.default_knobs = kDefaultKnobs;
  ARTUNE_ASSIGN_OR_RETURN(const int64_t sweep_id, store.InsertSweep(sweep));
  for (const auto& [eager, objective] : by_eager) {
    db::TrialRecord trial;
    trial.sweep_id = sweep_id;
    trial.knobs = {{"eager_threshold", eager}};
    trial.status = db::TrialStatus::kOk;
    trial.objective = objective;
    trial.ci_low = objective * 0.98;
    trial.ci_high = objective * 1.02;
    trial.samples = 5;
    trial.validated = true;
    ARTUNE_ASSIGN_OR_RETURN(const int64_t trial_id, store.InsertTrial(trial));
    (void)trial_id;
  }
  ARTUNE_RETURN_IF_ERROR(store.FinishSweep(sweep_id));
  return sweep_id;
}

struct LinkSpec {
  uint32_t round, pair, client_rank, server_rank;
  std::string client, server, client_device, server_device;
  std::map<std::string, double> by_eager;  // empty: the link failed
};

inline artune::Result<int64_t> WriteCluster(db::Store& store, uint32_t ranks,
                                            const std::string& pairs,
                                            const std::vector<LinkSpec>& links) {
  db::ClusterRecord cluster;
  cluster.ranks = ranks;
  cluster.pairs = pairs;
  cluster.measurement = "sweep";
  cluster.parameters = {{"repeats", "5"}};
  ARTUNE_ASSIGN_OR_RETURN(const int64_t cluster_id, store.InsertCluster(cluster));
  for (const LinkSpec& spec : links) {
    db::ClusterLinkRecord link{cluster_id,       spec.round,  spec.pair,  spec.client_rank,
                               spec.server_rank, spec.client, spec.server};
    link.client_device = spec.client_device;
    link.server_device = spec.server_device;
    if (spec.by_eager.empty()) {
      link.status = db::LinkStatus::kFailed;
      link.error = "peer 10.0.0.5:40000 did not answer";
    } else {
      link.status = db::LinkStatus::kOk;
      ARTUNE_ASSIGN_OR_RETURN(link.sweep_id,
                              WriteLinkSweep(store, spec.client, spec.server, spec.by_eager));
    }
    ARTUNE_RETURN_IF_ERROR(store.InsertClusterLink(link));
  }
  ARTUNE_RETURN_IF_ERROR(store.FinishCluster(cluster_id));
  return cluster_id;
}

inline artune::Result<int64_t> WriteTwoModelCluster(db::Store& store) {
  const auto values = [](double x, double fallback, double y) {
    return std::map<std::string, double>{{"4KiB", x}, {"16KiB", fallback}, {"64KiB", y}};
  };
  // Hosts a..e are ranks 0..4.
  return WriteCluster(store, 5, "all",
                      {{0, 0, 0, 1, "a", "b", "mlx5_0", "mlx5_0", values(5, 10, 9)},
                       {0, 1, 2, 3, "c", "d", "rxe0", "rxe0", values(9, 10, 6)},
                       {1, 0, 0, 2, "a", "c", "mlx5_0", "rxe0", values(8, 10, 6.5)},
                       {1, 1, 1, 3, "b", "d", "mlx5_0", "rxe0", values(16, 20, 16)},
                       {2, 0, 0, 3, "a", "d", "mlx5_0", "rxe0", values(8, 10, 8)},
                       {2, 1, 1, 2, "b", "c", "mlx5_0", "rxe0", values(8, 10, 8)},
                       {3, 0, 3, 4, "d", "e", "rxe0", "rxe0", {}}});
}

inline artune::Result<int64_t> WriteOneModelCluster(db::Store& store) {
  const std::map<std::string, double> values = {{"4KiB", 7}, {"16KiB", 10}, {"64KiB", 9}};
  return WriteCluster(store, 3, "ring",
                      {{0, 0, 0, 1, "p", "q", "tcp:eth0", "tcp:eth0", values},
                       {1, 0, 1, 2, "q", "r", "tcp:eth0", "tcp:eth0", values},
                       {2, 0, 2, 0, "r", "p", "tcp:eth0", "tcp:eth0", values}});
}

}  // namespace artune_cluster_test
