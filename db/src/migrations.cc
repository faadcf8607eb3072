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

// Schema v3: sweeps (`artune sweep`) and their trials. A trial is one point of the
// search space, identified within its sweep by `knobs`, the canonical text of its
// knob values (TrialKnobKey in store.h); UNIQUE (sweep_id, knobs) is what lets
// `artune sweep --resume` skip the points a killed run had already committed.
// Base config, parameters, full trial configs and metrics are key/value rows so a
// new knob or metric needs no migration.
constexpr std::string_view kSchemaV3 = R"sql(
CREATE TABLE sweeps (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at    TEXT    NOT NULL,  -- ISO 8601 UTC
  finished_at   TEXT    NOT NULL,  -- ISO 8601 UTC, '' while running (or killed)
  host          TEXT    NOT NULL,
  peer          TEXT    NOT NULL,  -- address, or 'loopback'
  fabric        TEXT    NOT NULL CHECK (fabric <> ''),
  objective     TEXT    NOT NULL CHECK (objective <> ''),  -- 'latency-p50', ...
  goal          TEXT    NOT NULL CHECK (goal IN ('min', 'max')),
  strategy      TEXT    NOT NULL CHECK (strategy <> ''),   -- 'grid' | 'adaptive'
  workload      TEXT    NOT NULL CHECK (workload <> ''),   -- 'scheme:skew' | 'capture:12'
  search_space  TEXT    NOT NULL,  -- canonical --knob specs, ' ' separated
  default_knobs TEXT    NOT NULL   -- the knob key of the transport's defaults
);
CREATE INDEX sweeps_by_time ON sweeps (created_at);

CREATE TABLE sweep_base_config (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  knob     TEXT    NOT NULL CHECK (knob <> ''),
  value    TEXT    NOT NULL,
  PRIMARY KEY (sweep_id, knob)
) WITHOUT ROWID;

CREATE TABLE sweep_parameters (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  name     TEXT    NOT NULL CHECK (name <> ''),
  value    TEXT    NOT NULL,
  PRIMARY KEY (sweep_id, name)
) WITHOUT ROWID;

CREATE TABLE trials (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep_id    INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  knobs       TEXT    NOT NULL CHECK (knobs <> ''),  -- 'chunk_size=64KiB;eager_threshold=4KiB'
  status      TEXT    NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  objective   REAL    NOT NULL,
  ci_low      REAL    NOT NULL,
  ci_high     REAL    NOT NULL,
  samples     INTEGER NOT NULL CHECK (samples >= 0),
  remeasured  INTEGER NOT NULL CHECK (remeasured >= 0),
  validated   INTEGER NOT NULL CHECK (validated IN (0, 1)),
  error       TEXT    NOT NULL,  -- '' unless status is 'failed' or 'invalid'
  started_at  TEXT    NOT NULL,  -- ISO 8601 UTC
  duration_s  REAL    NOT NULL,
  UNIQUE (sweep_id, knobs)
);

CREATE TABLE trial_config (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  knob     TEXT    NOT NULL CHECK (knob <> ''),
  value    TEXT    NOT NULL,
  PRIMARY KEY (trial_id, knob)
) WITHOUT ROWID;

CREATE TABLE trial_metrics (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  name     TEXT    NOT NULL CHECK (name <> ''),
  value    REAL    NOT NULL,
  PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;
)sql";

// Schema v4: a sweep's verdict on its best config against the transport's defaults,
// and the default measured again at the end of the sweep that the verdict rests on.
// One row per sweep in each (a resumed sweep replaces them: delete the verdict, the
// cascade takes the rest). The re-measurement is not a trial: trials are the
// search's points, UNIQUE per knob key, and the default's first measurement is
// already one of them. Its config is the sweep's base config and is not repeated.
constexpr std::string_view kSchemaV4 = R"sql(
CREATE TABLE sweep_verdicts (
  sweep_id   INTEGER PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE,
  verdict    TEXT    NOT NULL
             CHECK (verdict IN ('beats_default', 'within_noise', 'default_is_best',
                                'no_valid_trial')),
  best_knobs TEXT    NOT NULL,  -- knob key of the best trial judged; '' for no_valid_trial
  decided_at TEXT    NOT NULL   -- ISO 8601 UTC
);

CREATE TABLE sweep_default_remeasured (
  sweep_id    INTEGER PRIMARY KEY REFERENCES sweep_verdicts (sweep_id) ON DELETE CASCADE,
  knobs       TEXT    NOT NULL CHECK (knobs <> ''),  -- the sweep's default_knobs
  status      TEXT    NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  objective   REAL    NOT NULL,
  ci_low      REAL    NOT NULL,
  ci_high     REAL    NOT NULL,
  samples     INTEGER NOT NULL CHECK (samples >= 0),
  remeasured  INTEGER NOT NULL CHECK (remeasured >= 0),
  validated   INTEGER NOT NULL CHECK (validated IN (0, 1)),
  error       TEXT    NOT NULL,
  measured_at TEXT    NOT NULL,  -- ISO 8601 UTC
  duration_s  REAL    NOT NULL
);

CREATE TABLE sweep_default_remeasured_metrics (
  sweep_id INTEGER NOT NULL REFERENCES sweep_default_remeasured (sweep_id) ON DELETE CASCADE,
  name     TEXT    NOT NULL CHECK (name <> ''),
  value    REAL    NOT NULL,
  PRIMARY KEY (sweep_id, name)
) WITHOUT ROWID;
)sql";

// Schema v5: the best trial's config re-measured back to back with the default at the
// end of a sweep (SweepVerdict::best_remeasured), the same shape as the default's.
constexpr std::string_view kSchemaV5 = R"sql(
CREATE TABLE sweep_best_remeasured (
  sweep_id    INTEGER PRIMARY KEY REFERENCES sweep_verdicts (sweep_id) ON DELETE CASCADE,
  knobs       TEXT    NOT NULL CHECK (knobs <> ''),  -- the best trial's knob key
  status      TEXT    NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  objective   REAL    NOT NULL,
  ci_low      REAL    NOT NULL,
  ci_high     REAL    NOT NULL,
  samples     INTEGER NOT NULL CHECK (samples >= 0),
  remeasured  INTEGER NOT NULL CHECK (remeasured >= 0),
  validated   INTEGER NOT NULL CHECK (validated IN (0, 1)),
  error       TEXT    NOT NULL,
  measured_at TEXT    NOT NULL,  -- ISO 8601 UTC
  duration_s  REAL    NOT NULL
);

CREATE TABLE sweep_best_remeasured_metrics (
  sweep_id INTEGER NOT NULL REFERENCES sweep_best_remeasured (sweep_id) ON DELETE CASCADE,
  name     TEXT    NOT NULL CHECK (name <> ''),
  value    REAL    NOT NULL,
  PRIMARY KEY (sweep_id, name)
) WITHOUT ROWID;
)sql";

// Schema v6: the final round of a sweep. The number of interleaved rounds goes on
// the verdict; each finalist's pooled measurement (the shape of the re-measured
// tables, plus its rank and the rounds it won against the default) in a table of
// its own, with its metrics. The cascade from the verdict removes them together.
constexpr std::string_view kSchemaV6 = R"sql(
ALTER TABLE sweep_verdicts ADD COLUMN final_rounds INTEGER NOT NULL DEFAULT 0
  CHECK (final_rounds >= 0);

CREATE TABLE sweep_finalists (
  sweep_id    INTEGER NOT NULL REFERENCES sweep_verdicts (sweep_id) ON DELETE CASCADE,
  rank        INTEGER NOT NULL CHECK (rank >= 1),  -- 1: the winner
  knobs       TEXT    NOT NULL CHECK (knobs <> ''),
  status      TEXT    NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  objective   REAL    NOT NULL,
  ci_low      REAL    NOT NULL,
  ci_high     REAL    NOT NULL,
  samples     INTEGER NOT NULL CHECK (samples >= 0),
  remeasured  INTEGER NOT NULL CHECK (remeasured >= 0),
  validated   INTEGER NOT NULL CHECK (validated IN (0, 1)),
  error       TEXT    NOT NULL,
  measured_at TEXT    NOT NULL,  -- ISO 8601 UTC
  duration_s  REAL    NOT NULL,
  rounds_won  INTEGER NOT NULL CHECK (rounds_won >= 0),
  PRIMARY KEY (sweep_id, rank),
  UNIQUE (sweep_id, knobs)
);

CREATE TABLE sweep_finalist_metrics (
  sweep_id INTEGER NOT NULL,
  rank     INTEGER NOT NULL,
  name     TEXT    NOT NULL CHECK (name <> ''),
  value    REAL    NOT NULL,
  PRIMARY KEY (sweep_id, rank, name),
  FOREIGN KEY (sweep_id, rank) REFERENCES sweep_finalists (sweep_id, rank) ON DELETE CASCADE
) WITHOUT ROWID;
)sql";

constexpr std::array<Migration, 6> kMigrations = {{
    {1, "bench runs with their effective config and parameters", kSchemaV1},
    {2, "captures with their profile and per-method totals", kSchemaV2},
    {3, "sweeps and their trials (knobs, objective with CI, config, metrics)", kSchemaV3},
    {4, "sweep verdicts and the default re-measured at the end of a sweep", kSchemaV4},
    {5, "the best trial re-measured back to back with the default", kSchemaV5},
    {6, "the final round: finalists re-measured with the default in interleaved rounds", kSchemaV6},
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
