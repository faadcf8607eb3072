// Small RAII wrappers over SQLite's C API: a connection, a prepared statement with
// typed bind/column accessors, and a transaction guard. Every failure becomes a
// Status whose message names what was attempted and SQLite's own explanation.
//
// Threading: a Database and its Statements belong to one thread at a time (the
// connection is opened with SQLITE_OPEN_NOMUTEX). Statements must be destroyed
// before the Database they were prepared on.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "artune/status.h"

namespace artune::db::sqlite {

// Turns a SQLite result code into a Status: "what: <sqlite message>". `db` may be
// null (then only the code's generic text is used). Mapping: NOTADB/CORRUPT ->
// kCorruption, CONSTRAINT/TOOBIG/MISMATCH -> kInvalidArgument, BUSY/LOCKED ->
// kTimeout, PERM/AUTH -> kPermissionDenied, CANTOPEN/IOERR/FULL/READONLY ->
// kIoError, anything else (a bad SQL string, misuse) -> kInternal.
Status ErrorStatus(sqlite3* db, int rc, std::string_view what);

class Statement;

// An open connection; closed by the destructor.
class Database {
 public:
  // `flags` are SQLITE_OPEN_* flags (SQLITE_OPEN_NOMUTEX is always added).
  // `uri` is what SQLite opens (a path, or a file: URI with SQLITE_OPEN_URI);
  // `path` names the file in messages and defaults to `uri`.
  static Result<Database> Open(const std::string& uri, int flags, std::string path = {});

  Database() = default;
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more SQL statements that return no rows the caller needs.
  Status Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  // Runs a query that yields one row with one integer column (PRAGMA user_version).
  Result<int64_t> QueryInt64(std::string_view sql);
  // Runs a query that yields one row with one text column (PRAGMA journal_mode).
  Result<std::string> QueryText(std::string_view sql);

  int64_t LastInsertRowId() const { return sqlite3_last_insert_rowid(handle_); }
  sqlite3* handle() const { return handle_; }
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  sqlite3* handle_ = nullptr;
  std::string path_;
};

// A prepared statement; finalized by the destructor. Bind indexes are 1-based (as
// in SQLite), column indexes 0-based.
class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Status Bind(int index, int64_t value);
  Status Bind(int index, double value);
  // The text is copied by SQLite (SQLITE_TRANSIENT), so `value` may die right after.
  Status Bind(int index, std::string_view value);
  Status Bind(int index, bool value) { return Bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  Status Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Status Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Status Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  // Binds `values` in order to parameters index, index + 1, ... (each by the Bind
  // above that fits its type) and leaves `index` one past the last; stops at the
  // first error.
  template <typename... Values>
  Status BindEach(int& index, const Values&... values) {
    Status status = Status::Ok();
    ((status = status.ok() ? Bind(index++, values) : status), ...);
    return status;
  }

  // Advances: true when a row is available, false when the statement is done.
  Result<bool> Step();
  // Steps a statement that must not produce rows (INSERT, UPDATE, DDL).
  Status Run();
  // Makes the statement ready to run again, clearing its bindings.
  Status Reset();

  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  bool ColumnBool(int column) const { return ColumnInt64(column) != 0; }
  bool ColumnIsNull(int column) const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* handle, sqlite3* db) : handle_(handle), db_(db) {}
  Status BindResult(int rc, int index);

  sqlite3_stmt* handle_ = nullptr;
  sqlite3* db_ = nullptr;
};

// A transaction that is rolled back by the destructor unless Commit() succeeded.
// kImmediate takes the write lock at once (use it for every write: a deferred
// transaction that later upgrades to a writer can fail with SQLITE_BUSY without
// waiting); kDeferred is for reads that need one consistent snapshot.
class Transaction {
 public:
  enum class Kind { kDeferred, kImmediate };

  static Result<Transaction> Begin(Database& db, Kind kind);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}

  Database* db_ = nullptr;  // null once committed, rolled back or moved from
};

}  // namespace artune::db::sqlite
