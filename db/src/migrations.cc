#include "migrations.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "schema_texts.h"

namespace artune::db {
namespace {

const std::array<Migration, 12>& Migrations() {
  static const std::array<Migration, 12> migrations = {{
      {1, "bench runs with their effective config and parameters", SchemaTexts()[0]},
      {2, "captures with their profile and per-method totals", SchemaTexts()[1]},
      {3, "sweeps and their trials (knobs, objective with CI, config, metrics)", SchemaTexts()[2]},
      {4, "sweep verdicts and the default re-measured at the end of a sweep", SchemaTexts()[3]},
      {5, "the best trial re-measured back to back with the default", SchemaTexts()[4]},
      {6, "the final round: finalists re-measured with the default in interleaved rounds",
       SchemaTexts()[5]},
      {7, "cluster runs and their links, each link's measurement a sweep", SchemaTexts()[6]},
      {8, "the background load (CPU hogs) a sweep was measured under", SchemaTexts()[7]},
      {9, "link models (per-protocol slice costs) and the predictions made from them",
       SchemaTexts()[8]},
      {10, "link model points of calls carrying several slices", SchemaTexts()[9]},
      {11, "artune watch's decisions and their evidence", SchemaTexts()[10]},
      {12, "cluster runs of link models: a cluster link points at its model", SchemaTexts()[11]},
  }};
  return migrations;
}

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

std::span<const Migration> BuiltinMigrations() { return Migrations(); }

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
