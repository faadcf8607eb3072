// Cluster runs and their links on a SQLite connection: the part of SqliteStore
// (store.cc) that schema v7 added. Each function runs its own transaction; the
// contracts are those of the matching Store methods in store.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "sqlite.h"

namespace artune::db::clusters {

// `now` is the ISO 8601 UTC time used for an empty created_at / finished_at.
Result<int64_t> InsertCluster(sqlite::Database& db, const ClusterRecord& cluster,
                              const std::string& now);
Status FinishCluster(sqlite::Database& db, int64_t cluster_id, const std::string& now);
Result<std::vector<ClusterRecord>> ListClusters(sqlite::Database& db, int limit);
Result<ClusterRecord> GetCluster(sqlite::Database& db, int64_t id);

Status InsertClusterLink(sqlite::Database& db, const ClusterLinkRecord& link,
                         const std::string& now);
Result<std::vector<ClusterLinkRecord>> ListClusterLinks(sqlite::Database& db, int64_t cluster_id);

}  // namespace artune::db::clusters
