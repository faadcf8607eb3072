// The store's schema as an ordered list of migrations, and the code that brings a
// database up to date.
//
// Version N of the schema is what migrations 1..N have built; the version a file is
// at lives in `PRAGMA user_version`, and `PRAGMA application_id` marks the file as
// artune's. Adding to the schema means appending a migration with the next
// version, never editing a released one: files in the field were built by the old
// text.
#pragma once

#include <span>
#include <string_view>

#include "artune/status.h"
#include "sqlite.h"

namespace artune::db {

// "ARTU": written to the SQLite header so another application's database is
// recognised and refused instead of being migrated.
inline constexpr int32_t kArtuneApplicationId = 0x41525455;

struct Migration {
  int version;                   // 1, 2, 3, ... with no gaps
  std::string_view description;  // one line, for `artune db info` and error messages
  std::string_view sql;          // one or more statements
};

// The migrations this build knows, in order.
std::span<const Migration> BuiltinMigrations();

// Where the file stands, without writing to it: the schema version (0 for an empty
// file no one has written a schema into yet). Errors: kCorruption for a file that
// is not SQLite, belongs to another application, or is newer than `latest`.
Result<int> ReadSchemaVersion(sqlite::Database& db, int latest);

// Brings `db` to the last version of `migrations` (which must be numbered 1..N with
// no gaps: kInternal otherwise). All missing steps run in one IMMEDIATE transaction,
// so a failure or a killed process leaves the file at its old version. A concurrent
// opener waits (busy timeout) and then finds the work done.
// Errors: kCorruption when the file belongs to another application or has a
// version newer than N (the message says both versions); the errors of SQLite.
Status Migrate(sqlite::Database& db, std::span<const Migration> migrations);

}  // namespace artune::db
