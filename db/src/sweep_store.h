// Sweeps and trials on a SQLite connection: the part of SqliteStore (store.cc) that
// schema v3 added, kept in its own file. Each function runs its own transaction;
// the contracts are those of the matching Store methods in store.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/db/store.h"
#include "sqlite.h"

namespace artune::db::sweeps {

// `now` is the ISO 8601 UTC time used for an empty created_at / started_at.
Result<int64_t> InsertSweep(sqlite::Database& db, const SweepRecord& sweep, const std::string& now);
Status FinishSweep(sqlite::Database& db, int64_t sweep_id, const std::string& now);
Result<std::vector<SweepRecord>> ListSweeps(sqlite::Database& db, int limit);
Result<SweepRecord> GetSweep(sqlite::Database& db, int64_t id);

Result<int64_t> InsertTrial(sqlite::Database& db, const TrialRecord& trial, const std::string& now);
Result<std::vector<TrialRecord>> ListTrials(sqlite::Database& db, int64_t sweep_id);
Result<std::optional<TrialRecord>> BestTrial(sqlite::Database& db, int64_t sweep_id);

// Shared with sweep_verdict_store.cc. None opens a transaction.
// The sweep's goal, or kNotFound naming the id.
Result<std::string> SweepGoal(sqlite::Database& db, int64_t sweep_id);
// A trial from a row whose columns are, in order: id, sweep_id, knobs, status,
// objective, ci_low, ci_high, samples, remeasured, validated, error, started_at,
// duration_s (config and metrics are read separately).
Result<TrialRecord> ReadTrialRow(const sqlite::Statement& row);
// kInvalidArgument for knobs a TrialKnobKey cannot carry (empty, '=' or ';').
Status CheckKnobs(const std::map<std::string, std::string>& knobs);
// kInvalidArgument naming `record` and `field` for NaN or an infinity.
Status CheckFinite(double value, std::string_view field, std::string_view record);
// Inserts `pairs` as (id_column, key_column, value) rows of a key/value table;
// kInvalidArgument for an empty key.
Status InsertTextPairs(sqlite::Database& db, std::string_view table, std::string_view id_column,
                       std::string_view key_column, int64_t id,
                       const std::map<std::string, std::string>& pairs);
// Reads the (key, value) rows `sql` selects for `id` (its one parameter) into `out`.
Status LoadTextPairs(sqlite::Database& db, std::string_view sql, int64_t id,
                     std::map<std::string, std::string>& out);
// `value` as an SQLite integer; kInvalidArgument past INT64_MAX.
Result<int64_t> CheckedCount(uint64_t value, std::string_view field, std::string_view record);

}  // namespace artune::db::sweeps
