#include "cluster_store.h"

#include <string_view>

#include "record_table.h"
#include "sweep_store.h"

namespace artune::db::clusters {
namespace {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

constexpr std::string_view kClusterColumns =
    "id, created_at, finished_at, ranks, pairs, measurement";
constexpr RecordTable kClusterTable = {"clusters", kClusterColumns, "created_at", "cluster",
                                       "cluster runs"};

// sweep_id and model_id are NULL in the table for a link without one, 0 in the record.
constexpr std::string_view kLinkColumns =
    "cluster_id, round, pair, client_rank, server_rank, client_host, client_device, "
    "server_host, server_device, status, error, coalesce(sweep_id, 0), finished_at, "
    "coalesce(model_id, 0)";

ClusterRecord ReadClusterRow(const Statement& row) {
  ClusterRecord cluster;
  cluster.id = row.ColumnInt64(0);
  cluster.created_at = row.ColumnText(1);
  cluster.finished_at = row.ColumnText(2);
  cluster.ranks = static_cast<uint32_t>(row.ColumnInt64(3));
  cluster.pairs = row.ColumnText(4);
  cluster.measurement = row.ColumnText(5);
  return cluster;
}

Status LoadParameters(Database& db, ClusterRecord& cluster) {
  return sweeps::LoadTextPairs(db,
                               "SELECT name, value FROM cluster_parameters WHERE cluster_id = ?",
                               cluster.id, cluster.parameters);
}

Status NoSuchCluster(Database& db, int64_t id) {
  return Status::NotFound("no cluster run with id " + std::to_string(id) + " in " + db.path() +
                          " (`artune sweep --mpi` prints the id of each run it starts)");
}

// The number of ranks of a stored cluster, or kNotFound.
Result<uint32_t> ClusterRanks(Database& db, int64_t id) {
  ARTUNE_ASSIGN_OR_RETURN(Statement select, db.Prepare("SELECT ranks FROM clusters WHERE id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return NoSuchCluster(db, id);
  return static_cast<uint32_t>(select.ColumnInt64(0));
}

Result<ClusterLinkRecord> ReadLinkRow(const Statement& row) {
  ClusterLinkRecord link;
  link.cluster_id = row.ColumnInt64(0);
  link.round = static_cast<uint32_t>(row.ColumnInt64(1));
  link.pair = static_cast<uint32_t>(row.ColumnInt64(2));
  link.client_rank = static_cast<uint32_t>(row.ColumnInt64(3));
  link.server_rank = static_cast<uint32_t>(row.ColumnInt64(4));
  link.client_host = row.ColumnText(5);
  link.client_device = row.ColumnText(6);
  link.server_host = row.ColumnText(7);
  link.server_device = row.ColumnText(8);
  const std::string status = row.ColumnText(9);
  const std::optional<LinkStatus> parsed = ParseLinkStatus(status);
  // The schema's CHECK admits only the known words; anything else is damage.
  if (!parsed)
    return Status::Corruption("a stored cluster link has unknown status \"" + status + "\"");
  link.status = *parsed;
  link.error = row.ColumnText(10);
  link.sweep_id = row.ColumnInt64(11);
  link.finished_at = row.ColumnText(12);
  link.model_id = row.ColumnInt64(13);
  return link;
}

// kNotFound unless link model `id` is stored (a link must not point past the store).
Status LinkModelExists(Database& db, int64_t id) {
  ARTUNE_ASSIGN_OR_RETURN(Statement select, db.Prepare("SELECT 1 FROM link_models WHERE id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) {
    return Status::NotFound("no link model with id " + std::to_string(id) + " in " + db.path() +
                            ": a cluster link's model is stored before the link");
  }
  return Status::Ok();
}

Status CheckLink(const ClusterLinkRecord& link) {
  if (link.client_rank == link.server_rank) {
    return Status::InvalidArgument("cluster link " + std::to_string(link.client_rank) + "-" +
                                   std::to_string(link.server_rank) +
                                   " pairs a rank with itself: a link has two ends");
  }
  if (link.status == LinkStatus::kOk && link.sweep_id == 0 && link.model_id == 0) {
    return Status::InvalidArgument(
        "cluster link " + std::to_string(link.client_rank) + "-" +
        std::to_string(link.server_rank) +
        " is ok but has neither a sweep nor a model: an ok link points at its measurement");
  }
  if (link.status == LinkStatus::kFailed && link.error.empty()) {
    return Status::InvalidArgument("cluster link " + std::to_string(link.client_rank) + "-" +
                                   std::to_string(link.server_rank) +
                                   " failed without an error: say why it failed");
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> InsertCluster(Database& db, const ClusterRecord& cluster, const std::string& now) {
  if (cluster.ranks < 2) {
    return Status::InvalidArgument("a cluster run needs at least 2 ranks, not " +
                                   std::to_string(cluster.ranks));
  }
  if (cluster.pairs.empty()) {
    return Status::InvalidArgument("cluster run has an empty pair schedule: every run records it");
  }
  if (cluster.measurement != "sweep" && cluster.measurement != "ab" &&
      cluster.measurement != "model") {
    return Status::InvalidArgument("cluster measurement \"" + cluster.measurement +
                                   "\" is none of \"sweep\", \"ab\" and \"model\"");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO clusters (created_at, finished_at, ranks, pairs, measurement) "
                 "VALUES (?, '', ?, ?, ?)"));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(1, cluster.created_at.empty() ? now : cluster.created_at));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(2, static_cast<int64_t>(cluster.ranks)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(3, cluster.pairs));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(4, cluster.measurement));
  Status inserted = insert.Run();
  if (!inserted.ok()) return inserted.WithContext("cannot store cluster run");
  const int64_t id = db.LastInsertRowId();
  ARTUNE_RETURN_IF_ERROR(sweeps::InsertTextPairs(db, "cluster_parameters", "cluster_id", "name", id,
                                                 cluster.parameters));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return id;
}

Status FinishCluster(Database& db, int64_t cluster_id, const std::string& now) {
  return MarkFinished(db, kClusterTable, cluster_id, now,
                      [&] { return ClusterRanks(db, cluster_id).status(); });
}

Result<std::vector<ClusterRecord>> ListClusters(Database& db, int limit) {
  return ListNewestFirst(db, kClusterTable, limit, ReadClusterRow,
                         [&db](ClusterRecord& cluster) { return LoadParameters(db, cluster); });
}

Result<ClusterRecord> GetCluster(Database& db, int64_t id) {
  ARTUNE_ASSIGN_OR_RETURN(
      std::optional<ClusterRecord> cluster,
      FindRecord(db, kClusterTable, id, ReadClusterRow,
                 [&db](ClusterRecord& found) { return LoadParameters(db, found); }));
  if (!cluster) return NoSuchCluster(db, id);
  return std::move(*cluster);
}

Status InsertClusterLink(Database& db, const ClusterLinkRecord& link, const std::string& now) {
  ARTUNE_RETURN_IF_ERROR(CheckLink(link));
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_ASSIGN_OR_RETURN(uint32_t ranks, ClusterRanks(db, link.cluster_id));
  if (link.client_rank >= ranks || link.server_rank >= ranks) {
    return Status::InvalidArgument("cluster link " + std::to_string(link.client_rank) + "-" +
                                   std::to_string(link.server_rank) +
                                   " names a rank past cluster " + std::to_string(link.cluster_id) +
                                   "'s " + std::to_string(ranks) + " ranks");
  }
  if (link.sweep_id != 0) ARTUNE_RETURN_IF_ERROR(sweeps::SweepGoal(db, link.sweep_id).status());
  if (link.model_id != 0) ARTUNE_RETURN_IF_ERROR(LinkModelExists(db, link.model_id));
  // A resumed run measures a failed link again: its new result replaces the row.
  ARTUNE_ASSIGN_OR_RETURN(
      Statement replace,
      db.Prepare("DELETE FROM cluster_links WHERE cluster_id = ? AND client_rank = ? AND "
                 "server_rank = ? AND round = ? AND pair = ? AND status = 'failed'"));
  ARTUNE_RETURN_IF_ERROR(replace.Bind(1, link.cluster_id));
  ARTUNE_RETURN_IF_ERROR(replace.Bind(2, static_cast<int64_t>(link.client_rank)));
  ARTUNE_RETURN_IF_ERROR(replace.Bind(3, static_cast<int64_t>(link.server_rank)));
  ARTUNE_RETURN_IF_ERROR(replace.Bind(4, static_cast<int64_t>(link.round)));
  ARTUNE_RETURN_IF_ERROR(replace.Bind(5, static_cast<int64_t>(link.pair)));
  ARTUNE_RETURN_IF_ERROR(replace.Run());
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO cluster_links (cluster_id, round, pair, client_rank, server_rank, "
                 "client_host, client_device, server_host, server_device, status, error, "
                 "sweep_id, finished_at, model_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                 "NULLIF(?, 0), ?, NULLIF(?, 0))"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, link.cluster_id));
  for (uint32_t number : {link.round, link.pair, link.client_rank, link.server_rank}) {
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, static_cast<int64_t>(number)));
  }
  for (const std::string* text :
       {&link.client_host, &link.client_device, &link.server_host, &link.server_device}) {
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, *text));
  }
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, LinkStatusName(link.status)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, link.error));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, link.sweep_id));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, link.finished_at.empty() ? now : link.finished_at));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, link.model_id));
  Status inserted = insert.Run();
  const std::string name = "cluster " + std::to_string(link.cluster_id) + " link " +
                           std::to_string(link.client_rank) + "-" +
                           std::to_string(link.server_rank) + " (round " +
                           std::to_string(link.round) + ", pair " + std::to_string(link.pair) + ")";
  if (!inserted.ok()) {
    if (inserted.message().find("UNIQUE") != std::string::npos) {
      return Status::AlreadyExists(name +
                                   " is already stored: a resumed run skips the links it has "
                                   "measured");
    }
    return inserted.WithContext("cannot store " + name);
  }
  return transaction.Commit();
}

Result<std::vector<ClusterLinkRecord>> ListClusterLinks(Database& db, int64_t cluster_id) {
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kDeferred));
  ARTUNE_RETURN_IF_ERROR(ClusterRanks(db, cluster_id).status());
  ARTUNE_ASSIGN_OR_RETURN(Statement select,
                          db.Prepare("SELECT " + std::string(kLinkColumns) +
                                     " FROM cluster_links WHERE cluster_id = ? ORDER BY round, "
                                     "pair"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, cluster_id));
  std::vector<ClusterLinkRecord> links;
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) break;
    ARTUNE_ASSIGN_OR_RETURN(ClusterLinkRecord link, ReadLinkRow(select));
    links.push_back(std::move(link));
  }
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return links;
}

}  // namespace artune::db::clusters
