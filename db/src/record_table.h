// Listing and reading back the store's top-level records (bench runs, captures,
// sweeps, cluster runs) alike: a table of rows with an id and a time, each row read
// into a record and then completed from its child tables (key/value pairs, method
// rows), all in one read snapshot; and marking a sweep or cluster run finished.
//
// Threading: as Database (one thread at a time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "artune/status.h"
#include "sqlite.h"

namespace artune::db {

// One table of records and the words its errors use.
struct RecordTable {
  std::string_view table;        // "bench_runs"
  std::string_view columns;      // the SELECT list the row reader expects
  std::string_view time_column;  // listed newest first by it, then by id
  std::string_view noun;         // "bench run": "bench run list limit -1 is negative"
  std::string_view plural;       // "runs": "pass 0 for all runs or a positive count"
  // Where the ids are found, for an id that is not: "`artune results` lists the
  // stored runs".
  std::string_view where_ids = "";
};

// The newest `limit` records of `table` (0: all). `read_row(const Statement&)`
// makes a record of a row; `complete(Record&)` loads its child rows (a Status).
// Errors: kInvalidArgument for a negative limit; the database's.
template <typename ReadRow, typename Complete>
auto ListNewestFirst(sqlite::Database& db, const RecordTable& table, int limit, ReadRow read_row,
                     Complete complete)
    -> Result<std::vector<std::invoke_result_t<ReadRow, const sqlite::Statement&>>> {
  using Record = std::invoke_result_t<ReadRow, const sqlite::Statement&>;
  if (limit < 0) {
    return Status::InvalidArgument(std::string(table.noun) + " list limit " +
                                   std::to_string(limit) + " is negative: pass 0 for all " +
                                   std::string(table.plural) + " or a positive count");
  }
  // One snapshot for the records and their child rows.
  ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                          sqlite::Transaction::Begin(db, sqlite::Transaction::Kind::kDeferred));
  ARTUNE_ASSIGN_OR_RETURN(
      sqlite::Statement select,
      db.Prepare("SELECT " + std::string(table.columns) + " FROM " + std::string(table.table) +
                 " ORDER BY " + std::string(table.time_column) + " DESC, id DESC LIMIT ?"));
  // SQLite reads a negative LIMIT as "no limit".
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, static_cast<int64_t>(limit == 0 ? -1 : limit)));
  std::vector<Record> records;
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) break;
    records.push_back(read_row(select));
  }
  for (Record& record : records) ARTUNE_RETURN_IF_ERROR(complete(record));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return records;
}

// The record of `table` with `id`, read and completed as ListNewestFirst does;
// nullopt when there is none (the caller says where to find the ids).
template <typename ReadRow, typename Complete>
auto FindRecord(sqlite::Database& db, const RecordTable& table, int64_t id, ReadRow read_row,
                Complete complete)
    -> Result<std::optional<std::invoke_result_t<ReadRow, const sqlite::Statement&>>> {
  using Record = std::invoke_result_t<ReadRow, const sqlite::Statement&>;
  ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                          sqlite::Transaction::Begin(db, sqlite::Transaction::Kind::kDeferred));
  ARTUNE_ASSIGN_OR_RETURN(sqlite::Statement select,
                          db.Prepare("SELECT " + std::string(table.columns) + " FROM " +
                                     std::string(table.table) + " WHERE id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::optional<Record>();
  Record record = read_row(select);
  ARTUNE_RETURN_IF_ERROR(complete(record));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return std::optional<Record>(std::move(record));
}

// kNotFound for an `id` that `table` does not hold: "no <noun> with id <id> in
// <path> (<where_ids>)".
inline Status NoSuchRecord(sqlite::Database& db, const RecordTable& table, int64_t id) {
  return Status::NotFound("no " + std::string(table.noun) + " with id " + std::to_string(id) +
                          " in " + db.path() + " (" + std::string(table.where_ids) + ")");
}

// FindRecord, with NoSuchRecord's error where it finds none.
template <typename ReadRow, typename Complete>
auto GetRecord(sqlite::Database& db, const RecordTable& table, int64_t id, ReadRow read_row,
               Complete complete)
    -> Result<std::invoke_result_t<ReadRow, const sqlite::Statement&>> {
  ARTUNE_ASSIGN_OR_RETURN(auto record, FindRecord(db, table, id, read_row, complete));
  if (!record) return NoSuchRecord(db, table, id);
  return std::move(*record);
}

// Sets finished_at to `now` on the record of `table` with `id`, in one write
// transaction, once `exists()` (a Status: kNotFound naming the record when there
// is none) passed. Errors: that one; the database's.
template <typename Exists>
Status MarkFinished(sqlite::Database& db, const RecordTable& table, int64_t id,
                    const std::string& now, Exists exists) {
  ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                          sqlite::Transaction::Begin(db, sqlite::Transaction::Kind::kImmediate));
  ARTUNE_RETURN_IF_ERROR(exists());
  ARTUNE_ASSIGN_OR_RETURN(
      sqlite::Statement update,
      db.Prepare("UPDATE " + std::string(table.table) + " SET finished_at = ? WHERE id = ?"));
  ARTUNE_RETURN_IF_ERROR(update.Bind(1, now));
  ARTUNE_RETURN_IF_ERROR(update.Bind(2, id));
  ARTUNE_RETURN_IF_ERROR(update.Run());
  return transaction.Commit();
}

}  // namespace artune::db
