#include "migrations.h"

#include <array>
#include <cstdio>
#include <string>

namespace artune::db {
namespace {

// Schema v1: bench runs. Config and parameters are key/value tables rather than
// columns so a new knob in the transport's table needs no migration here.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE bench_runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at        TEXT    NOT NULL,  -- ISO 8601 UTC, e.g. 2024-05-01T12:34:56.789Z
  host              TEXT    NOT NULL,
  peer              TEXT    NOT NULL,  -- address, or 'loopback'
  transport         TEXT    NOT NULL CHECK (transport <> ''),
  benchmark         TEXT    NOT NULL CHECK (benchmark <> ''),
  scheme            TEXT    NOT NULL,
  fabric            TEXT    NOT NULL,  -- '' for stock gRPC
  payload_bytes     INTEGER NOT NULL CHECK (payload_bytes >= 0),
  duration_s        REAL    NOT NULL,
  rpcs              INTEGER NOT NULL CHECK (rpcs >= 0),
  latency_p50_us    REAL    NOT NULL,
  latency_p99_us    REAL    NOT NULL,
  latency_mean_us   REAL    NOT NULL,
  latency_stddev_us REAL    NOT NULL,
  bandwidth_mbps    REAL    NOT NULL,
  rpcs_per_s        REAL    NOT NULL,
  validated         INTEGER NOT NULL CHECK (validated IN (0, 1))
);
CREATE INDEX bench_runs_by_time ON bench_runs (started_at);

CREATE TABLE bench_run_config (
  run_id INTEGER NOT NULL REFERENCES bench_runs (id) ON DELETE CASCADE,
  knob   TEXT    NOT NULL CHECK (knob <> ''),
  value  TEXT    NOT NULL,
  PRIMARY KEY (run_id, knob)
) WITHOUT ROWID;

CREATE TABLE bench_run_parameters (
  run_id INTEGER NOT NULL REFERENCES bench_runs (id) ON DELETE CASCADE,
  name   TEXT    NOT NULL CHECK (name <> ''),
  value  TEXT    NOT NULL,
  PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
)sql";

// Schema v2: captures from `artune probe`. The whole profile is kept as its JSON
// (the probes' own format, so histograms need no schema here); the per-method
// totals are also rows so SQL can filter and sum them without parsing JSON.
constexpr std::string_view kSchemaV2 = R"sql(
CREATE TABLE captures (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at   TEXT    NOT NULL,  -- ISO 8601 UTC
  backend      TEXT    NOT NULL CHECK (backend <> ''),  -- 'pcap' | 'ebpf' | ...
  process      TEXT    NOT NULL,  -- process name or pid, '' when not known
  duration_s   REAL    NOT NULL,
  lost_events  INTEGER NOT NULL CHECK (lost_events >= 0),
  profile_json TEXT    NOT NULL
);
CREATE INDEX captures_by_time ON captures (started_at);

CREATE TABLE capture_methods (
  capture_id INTEGER NOT NULL REFERENCES captures (id) ON DELETE CASCADE,
  method     TEXT    NOT NULL CHECK (method <> ''),
  direction  TEXT    NOT NULL,  -- 'request' | 'response'
  messages   INTEGER NOT NULL CHECK (messages >= 0),
  bytes      INTEGER NOT NULL CHECK (bytes >= 0),
  scheme     TEXT    NOT NULL,  -- the size scheme the probes classified
  small      INTEGER NOT NULL CHECK (small >= 0),
  medium     INTEGER NOT NULL CHECK (medium >= 0),
  large      INTEGER NOT NULL CHECK (large >= 0),
  PRIMARY KEY (capture_id, method, direction)
) WITHOUT ROWID;
)sql";

constexpr std::array<Migration, 2> kMigrations = {{
    {1, "bench runs with their effective config and parameters", kSchemaV1},
    {2, "captures with their profile and per-method totals", kSchemaV2},
}};

Status CheckNumbering(std::span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i + 1)) {
      return Status::Internal("migration list is out of order: entry " + std::to_string(i) +
                              " has version " + std::to_string(migrations[i].version) +
                              ", expected " + std::to_string(i + 1));
    }
  }
  return Status::Ok();
}

std::string Hex(int64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%08llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

Result<int> ReadSchemaVersion(sqlite::Database& db, int latest) {
  ARTUNE_ASSIGN_OR_RETURN(int64_t application_id, db.QueryInt64("PRAGMA application_id"));
  ARTUNE_ASSIGN_OR_RETURN(int64_t version, db.QueryInt64("PRAGMA user_version"));
  if (application_id != kArtuneApplicationId) {
    ARTUNE_ASSIGN_OR_RETURN(int64_t objects, db.QueryInt64("SELECT count(*) FROM sqlite_schema"));
    if (application_id != 0 || objects != 0) {
      return Status::Corruption(
          db.path() + " is a SQLite database but not an artune one (application_id " +
          Hex(application_id) + ", " + std::to_string(objects) +
          " schema objects): pass --db with a path for artune's own database");
    }
    return 0;  // an empty file: ours to create
  }
  if (version > latest) {
    return Status::Corruption(db.path() + " has schema version " + std::to_string(version) +
                              " but this build of artune knows versions up to " +
                              std::to_string(latest) +
                              ": use a newer artune, or pass --db with another path");
  }
  if (version < 0) {
    return Status::Corruption(db.path() + " has an invalid schema version " +
                              std::to_string(version));
  }
  return static_cast<int>(version);
}

std::span<const Migration> BuiltinMigrations() { return kMigrations; }

Status Migrate(sqlite::Database& db, std::span<const Migration> migrations) {
  ARTUNE_RETURN_IF_ERROR(CheckNumbering(migrations));
  const int latest = static_cast<int>(migrations.size());

  // Fast path without a write lock: an up-to-date file (the usual case, and the only
  // one that works on a read-only file).
  ARTUNE_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db, latest));
  if (current == latest && latest > 0) return Status::Ok();

  ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                          sqlite::Transaction::Begin(db, sqlite::Transaction::Kind::kImmediate));
  // Again under the lock: another process may have migrated in between.
  ARTUNE_ASSIGN_OR_RETURN(current, ReadSchemaVersion(db, latest));
  for (const Migration& migration : migrations) {
    if (migration.version <= current) continue;
    Status status = db.Exec(migration.sql);
    if (!status.ok()) {
      return status.WithContext("migration to schema version " + std::to_string(migration.version) +
                                " (" + std::string(migration.description) + ") failed");
    }
  }
  // PRAGMA values cannot be bound parameters; both are integers formatted here.
  ARTUNE_RETURN_IF_ERROR(
      db.Exec("PRAGMA application_id = " + std::to_string(kArtuneApplicationId)));
  ARTUNE_RETURN_IF_ERROR(db.Exec("PRAGMA user_version = " + std::to_string(latest)));
  return transaction.Commit();
}

}  // namespace artune::db
