#include "sqlite.h"

#include <utility>

namespace artune::db::sqlite {

namespace {

ErrorCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorCode::kCorruption;
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
      return ErrorCode::kInvalidArgument;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorCode::kTimeout;
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return ErrorCode::kPermissionDenied;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
      return ErrorCode::kIoError;
    default:
      return ErrorCode::kInternal;
  }
}

// What a user can do about the error, for the codes where there is something.
std::string_view HintFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return " (another process held the database lock too long; retry when it is done)";
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return " (check that the file and its directory exist and are writable, or pass --db)";
    case SQLITE_FULL:
      return " (the disk is full)";
    default:
      return "";
  }
}

}  // namespace

Status ErrorStatus(sqlite3* db, int rc, std::string_view what) {
  std::string detail = sqlite3_errstr(rc);
  // The connection's message is more specific ("no such table: x") when it refers
  // to this error; the generic text of the code is the fallback.
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) detail = sqlite3_errmsg(db);
  return Status(CodeFor(rc), std::string(what) + ": " + detail + std::string(HintFor(rc)));
}

// ---- Database ---------------------------------------------------------------

Result<Database> Database::Open(const std::string& uri, int flags, std::string path) {
  if (path.empty()) path = uri;
  sqlite3* handle = nullptr;
  int rc = sqlite3_open_v2(uri.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = ErrorStatus(handle, rc, "cannot open database " + path);
    sqlite3_close_v2(handle);  // a handle is returned even on failure
    return status;
  }
  sqlite3_extended_result_codes(handle, 1);
  return Database(handle, path);
}

Database::Database(Database&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) sqlite3_close_v2(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() {
  if (handle_ != nullptr) sqlite3_close_v2(handle_);
}

Status Database::Exec(std::string_view sql) {
  std::string text(sql);  // sqlite3_exec needs a terminated string
  char* error = nullptr;
  int rc = sqlite3_exec(handle_, text.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string detail = error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  return Status(CodeFor(rc), "SQL failed on " + path_ + ": " + detail + std::string(HintFor(rc)) +
                                 " (in: " + text.substr(0, 80) + ")");
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* statement = nullptr;
  int rc =
      sqlite3_prepare_v2(handle_, sql.data(), static_cast<int>(sql.size()), &statement, nullptr);
  if (rc != SQLITE_OK) {
    return ErrorStatus(
        handle_, rc,
        "cannot prepare SQL on " + path_ + " (" + std::string(sql.substr(0, 80)) + ")");
  }
  return Statement(statement, handle_);
}

Result<int64_t> Database::QueryInt64(std::string_view sql) {
  ARTUNE_ASSIGN_OR_RETURN(Statement statement, Prepare(sql));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::Internal("query returned no row: " + std::string(sql));
  return statement.ColumnInt64(0);
}

Result<std::string> Database::QueryText(std::string_view sql) {
  ARTUNE_ASSIGN_OR_RETURN(Statement statement, Prepare(sql));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::Internal("query returned no row: " + std::string(sql));
  return statement.ColumnText(0);
}

// ---- Statement --------------------------------------------------------------

Statement::Statement(Statement&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), db_(other.db_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) sqlite3_finalize(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    db_ = other.db_;
  }
  return *this;
}

Statement::~Statement() {
  if (handle_ != nullptr) sqlite3_finalize(handle_);
}

Status Statement::BindResult(int rc, int index) {
  if (rc == SQLITE_OK) return Status::Ok();
  return ErrorStatus(db_, rc,
                     "cannot bind parameter " + std::to_string(index) + " of \"" +
                         std::string(sqlite3_sql(handle_)).substr(0, 80) + "\"");
}

Status Statement::Bind(int index, int64_t value) {
  return BindResult(sqlite3_bind_int64(handle_, index, value), index);
}

Status Statement::Bind(int index, double value) {
  return BindResult(sqlite3_bind_double(handle_, index, value), index);
}

Status Statement::Bind(int index, std::string_view value) {
  return BindResult(sqlite3_bind_text64(handle_, index, value.data(), value.size(),
                                        SQLITE_TRANSIENT, SQLITE_UTF8),
                    index);
}

Result<bool> Statement::Step() {
  int rc = sqlite3_step(handle_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return ErrorStatus(db_, rc,
                     "SQL failed (" + std::string(sqlite3_sql(handle_)).substr(0, 80) + ")");
}

Status Statement::Run() {
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, Step());
  if (has_row) {
    return Status::Internal("statement returned a row where none was expected: " +
                            std::string(sqlite3_sql(handle_)));
  }
  return Status::Ok();
}

Status Statement::Reset() {
  // sqlite3_reset repeats the error of the last step, which was already reported.
  sqlite3_reset(handle_);
  int rc = sqlite3_clear_bindings(handle_);
  if (rc != SQLITE_OK) return ErrorStatus(db_, rc, "cannot clear statement bindings");
  return Status::Ok();
}

int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(handle_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(handle_, column); }

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(handle_, column);
  if (text == nullptr) return {};
  int bytes = sqlite3_column_bytes(handle_, column);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(bytes));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(handle_, column) == SQLITE_NULL;
}

// ---- Transaction ------------------------------------------------------------

Result<Transaction> Transaction::Begin(Database& db, Kind kind) {
  ARTUNE_RETURN_IF_ERROR(db.Exec(kind == Kind::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN"));
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  if (db_ == nullptr) return;
  // Nothing useful can be done with a failed rollback here; SQLite rolls back an
  // open transaction when the connection closes anyway.
  (void)db_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  if (db_ == nullptr) return Status::Internal("Commit() on a finished transaction");
  Status status = db_->Exec("COMMIT");
  // On failure the destructor still rolls back: COMMIT that fails with BUSY leaves
  // the transaction open.
  if (status.ok()) db_ = nullptr;
  return status;
}

}  // namespace artune::db::sqlite
