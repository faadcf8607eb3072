#include "memory_copy.h"

#include <sys/statvfs.h>

#include <filesystem>
#include <string>

namespace artune::db {
namespace {

std::string Kib(uint64_t bytes) { return std::to_string(bytes / 1024) + " KiB"; }

}  // namespace

Status CheckDatabaseWritable(sqlite::Database& db) {
  const char* file = sqlite3_db_filename(db.handle(), "main");
  if (file == nullptr || *file == '\0') return Status::Ok();  // in memory
  if (sqlite3_db_readonly(db.handle(), "main") == 1) {
    return Status::PermissionDenied(
        db.path() +
        " is read-only to this process (the file, its directory or its mount): fix the "
        "permissions, or pass --db with a writable path");
  }
  std::filesystem::path directory = std::filesystem::path(file).parent_path();
  if (directory.empty()) directory = ".";
  struct statvfs space {};
  if (statvfs(directory.c_str(), &space) != 0) return Status::Ok();  // nothing to say
  const uint64_t free_bytes = static_cast<uint64_t>(space.f_bavail) * space.f_frsize;
  if (free_bytes < kLowFreeBytes) {
    return Status::ResourceExhausted("the file system of " + db.path() + " has " + Kib(free_bytes) +
                                     " free (less than " + Kib(kLowFreeBytes) +
                                     "): free space, or pass --db with a path on another one");
  }
  return Status::Ok();
}

Result<sqlite::Database> OpenMemoryDatabase() {
  ARTUNE_ASSIGN_OR_RETURN(
      sqlite::Database db,
      sqlite::Database::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             "an in-memory copy of the store"));
  ARTUNE_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys = ON"));
  return db;
}

Result<sqlite::Database> CopyDatabaseToMemory(sqlite::Database& source) {
  ARTUNE_ASSIGN_OR_RETURN(sqlite::Database copy, OpenMemoryDatabase());
  sqlite3_backup* backup = sqlite3_backup_init(copy.handle(), "main", source.handle(), "main");
  if (backup == nullptr) {
    return sqlite::ErrorStatus(copy.handle(), sqlite3_errcode(copy.handle()),
                               "cannot copy " + source.path() + " into memory");
  }
  const int step = sqlite3_backup_step(backup, -1);  // every page in one step
  const int finish = sqlite3_backup_finish(backup);
  if (step != SQLITE_DONE) {
    return sqlite::ErrorStatus(source.handle(), step,
                               "cannot copy " + source.path() + " into memory");
  }
  if (finish != SQLITE_OK) {
    return sqlite::ErrorStatus(copy.handle(), finish,
                               "cannot copy " + source.path() + " into memory");
  }
  return copy;
}

}  // namespace artune::db
