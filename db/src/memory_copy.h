// What a command needs when its store cannot take writes: a look at whether it
// can, before measuring, and a copy in memory to carry on with (store.h:
// Store::CheckWritable, Store::CopyToMemory, Store::OpenInMemory).
#pragma once

#include <cstdint>

#include "artune/status.h"
#include "sqlite.h"

namespace artune::db {

// Below this much free space on the store's file system a write may fail: a
// sweep's trials and verdict take a few hundred KiB of write-ahead log.
inline constexpr uint64_t kLowFreeBytes = 1024 * 1024;

// Without writing: kPermissionDenied when SQLite opened `db` read-only (a file,
// directory or mount this process may not write); kResourceExhausted when its file
// system has less than kLowFreeBytes free (statvfs, as this user sees it). An
// in-memory database is always writable.
Status CheckDatabaseWritable(sqlite::Database& db);

// An empty in-memory database with foreign keys on (the caller migrates it).
Result<sqlite::Database> OpenMemoryDatabase();

// Everything in `source`, copied into a new in-memory database page by page
// (sqlite3_backup), so rows keep their ids and new rows continue the numbering.
// Reads `source` only; the caller migrates the copy (a read-only store may be at an
// older schema).
Result<sqlite::Database> CopyDatabaseToMemory(sqlite::Database& source);

}  // namespace artune::db
