// A synthetic model cluster run (`artune sweep --mpi --strategy model`) written
// through the db::Store API, for the tests of `results --cluster`, `report
// --cluster` and the dashboard's home view.
//
// WriteLinkModelCluster: 4 ranks p, q, r, s on tcp, pairs "all", workload the skew
// scheme, search space eager_threshold=4KiB,64KiB x chunk_size=64KiB,1MiB. Each link
// model costs time = fixed + size / bandwidth (eager 10 us + 1 GB/s, coalesced eager
// the same, read 30 us + 4 GB/s, chunked 40 us + 2 GB/s at 64 KiB chunks and 8 GB/s
// at 1 MiB) at 64 B..8 MiB, one call in flight, adaptive polling. Links (round, pair):
//   (0,0) p -> q   model as above
//   (0,1) r -> s   model as above
//   (1,0) p -> r   model as above
//   (1,1) q -> s   every byte 20x slower: the per-byte outlier
//   (2,0) p -> s   failed: "peer 10.0.0.4:40000 did not answer", no model
// The predictions are whatever tuner::ReadClusterModels makes of these; the tests
// compare the views with `results --cluster ID --json`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/tuner/sweep_plan.h"

namespace artune_cluster_test {

namespace db = artune::db;

inline db::LinkModelRecord SyntheticLinkModel(const std::string& host, const std::string& peer,
                                              double byte_factor) {
  db::LinkModelRecord model;
  model.host = host;
  model.peer = peer + ":40000";
  model.fabric = "tcp";
  model.rounds = 1;
  model.duration_s = 2.5;
  struct Curve {
    const char* protocol;
    uint64_t chunk;
    uint32_t depth;
    double fixed_s, bytes_per_s;
  };
  for (const Curve& curve :
       {Curve{"eager", 0, 0, 10e-6, 1e9}, Curve{"coalesced-eager", 0, 0, 10e-6, 1e9},
        Curve{"rendezvous-read", 0, 0, 30e-6, 4e9},
        Curve{"chunked-rendezvous", 64 << 10, 4, 40e-6, 2e9},
        Curve{"chunked-rendezvous", 1 << 20, 4, 40e-6, 8e9}}) {
    for (uint64_t size = 64; size <= (8u << 20); size *= 4) {
      const double seconds =
          curve.fixed_s + static_cast<double>(size) * byte_factor / curve.bytes_per_s;
      model.points.push_back({curve.protocol, "adaptive", curve.chunk, curve.depth, size, 1,
                              seconds, seconds * 0.95, seconds * 1.05, 2});
    }
  }
  return model;
}

inline artune::Result<int64_t> WriteLinkModelCluster(db::Store& store) {
  artune::tuner::SweepPlan plan;
  plan.scheme = "skew";
  db::ClusterRecord cluster;
  cluster.ranks = 4;
  cluster.pairs = "all";
  cluster.measurement = "model";
  cluster.parameters = artune::tuner::SweepParameters(plan);
  cluster.parameters["objective"] = "workload-time";
  cluster.parameters["strategy"] = "model";
  cluster.parameters["search_space"] = "eager_threshold=4KiB,64KiB chunk_size=64KiB,1MiB";
  cluster.parameters["workload"] = "scheme:skew";
  cluster.parameters["pairs_seed"] = "1";
  cluster.parameters["model_budget_s"] = "10";
  ARTUNE_ASSIGN_OR_RETURN(const int64_t cluster_id, store.InsertCluster(cluster));
  struct Spec {
    uint32_t round, pair, client_rank, server_rank;
    const char *client, *server;
    double byte_factor;  // 0: the link failed
  };
  for (const Spec& spec :
       {Spec{0, 0, 0, 1, "p", "q", 1}, Spec{0, 1, 2, 3, "r", "s", 1}, Spec{1, 0, 0, 2, "p", "r", 1},
        Spec{1, 1, 1, 3, "q", "s", 20}, Spec{2, 0, 0, 3, "p", "s", 0}}) {
    db::ClusterLinkRecord link{cluster_id,       spec.round,  spec.pair,  spec.client_rank,
                               spec.server_rank, spec.client, spec.server};
    link.client_device = link.server_device = "tcp:eth0";
    if (spec.byte_factor == 0) {
      link.status = db::LinkStatus::kFailed;
      link.error = "peer 10.0.0.4:40000 did not answer";
    } else {
      link.status = db::LinkStatus::kOk;
      ARTUNE_ASSIGN_OR_RETURN(link.model_id, store.InsertLinkModel(SyntheticLinkModel(
                                                 spec.client, spec.server, spec.byte_factor)));
    }
    ARTUNE_RETURN_IF_ERROR(store.InsertClusterLink(link));
  }
  ARTUNE_RETURN_IF_ERROR(store.FinishCluster(cluster_id));
  return cluster_id;
}

}  // namespace artune_cluster_test
