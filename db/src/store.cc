// Store on SQLite: schema in migrations.cc, connection handling in sqlite.cc.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "artune/base/time.h"
#include "artune/db/store.h"
#include "cluster_store.h"
#include "memory_copy.h"
#include "migrations.h"
#include "model_store.h"
#include "record_table.h"
#include "sqlite.h"
#include "store_internal.h"
#include "sweep_store.h"
#include "sweep_verdict_store.h"
#include "watch_store.h"

namespace artune::db {

namespace {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

// Long enough for another process to finish inserting a run (milliseconds), short
// enough that a stuck lock holder is reported rather than waited on forever.
constexpr int kBusyTimeoutMs = 5000;

uint64_t FileBytes(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return 0;
  return static_cast<uint64_t>(info.st_size);
}

// The columns of bench_runs in the order every SELECT and the INSERT use.
constexpr std::string_view kRunColumns =
    "id, started_at, host, peer, transport, benchmark, scheme, fabric, payload_bytes, "
    "duration_s, rpcs, latency_p50_us, latency_p99_us, latency_mean_us, latency_stddev_us, "
    "bandwidth_mbps, rpcs_per_s, validated";

BenchRun ReadRunRow(const Statement& row) {
  BenchRun run;
  run.id = row.ColumnInt64(0);
  run.started_at = row.ColumnText(1);
  run.host = row.ColumnText(2);
  run.peer = row.ColumnText(3);
  run.transport = row.ColumnText(4);
  run.benchmark = row.ColumnText(5);
  run.scheme = row.ColumnText(6);
  run.fabric = row.ColumnText(7);
  run.payload_bytes = static_cast<uint64_t>(row.ColumnInt64(8));
  run.duration_s = row.ColumnDouble(9);
  run.rpcs = static_cast<uint64_t>(row.ColumnInt64(10));
  run.latency.p50_us = row.ColumnDouble(11);
  run.latency.p99_us = row.ColumnDouble(12);
  run.latency.mean_us = row.ColumnDouble(13);
  run.latency.stddev_us = row.ColumnDouble(14);
  run.bandwidth_mbps = row.ColumnDouble(15);
  run.rpcs_per_s = row.ColumnDouble(16);
  run.validated = row.ColumnBool(17);
  return run;
}

constexpr RecordTable kRunTable = {"bench_runs", kRunColumns,
                                   "started_at", "bench run",
                                   "runs",       "`artune results` lists the stored runs"};

constexpr std::string_view kCaptureColumns =
    "id, started_at, backend, process, duration_s, lost_events, profile_json";

CaptureRecord ReadCaptureRow(const Statement& row) {
  CaptureRecord capture;
  capture.id = row.ColumnInt64(0);
  capture.started_at = row.ColumnText(1);
  capture.backend = row.ColumnText(2);
  capture.process = row.ColumnText(3);
  capture.duration_s = row.ColumnDouble(4);
  capture.lost_events = static_cast<uint64_t>(row.ColumnInt64(5));
  capture.profile_json = row.ColumnText(6);
  return capture;
}

constexpr RecordTable kCaptureTable = {"captures",   kCaptureColumns,
                                       "started_at", "capture",
                                       "captures",   "`artune captures` lists the stored captures"};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(Database db) : db_(std::move(db)) {}

  Result<int64_t> InsertBenchRun(const BenchRun& run) override {
    ARTUNE_ASSIGN_OR_RETURN(int64_t payload_bytes,
                            sweeps::CheckedCount(run.payload_bytes, "payload_bytes", "bench run"));
    ARTUNE_ASSIGN_OR_RETURN(int64_t rpcs, sweeps::CheckedCount(run.rpcs, "rpcs", "bench run"));
    ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                            Transaction::Begin(db_, Transaction::Kind::kImmediate));

    ARTUNE_ASSIGN_OR_RETURN(
        Statement insert,
        db_.Prepare("INSERT INTO bench_runs (" + std::string(kRunColumns.substr(4)) +
                    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    int column = 1;
    ARTUNE_RETURN_IF_ERROR(
        insert.Bind(column++, run.started_at.empty() ? NowIso8601Utc() : run.started_at));
    for (const std::string* text :
         {&run.host, &run.peer, &run.transport, &run.benchmark, &run.scheme, &run.fabric}) {
      ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, *text));
    }
    ARTUNE_RETURN_IF_ERROR(insert.BindEach(column, payload_bytes, run.duration_s, rpcs));
    for (double value : {run.latency.p50_us, run.latency.p99_us, run.latency.mean_us,
                         run.latency.stddev_us, run.bandwidth_mbps, run.rpcs_per_s}) {
      ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, value));
    }
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, run.validated));
    Status inserted = insert.Run();
    if (!inserted.ok()) return inserted.WithContext("cannot store bench run");
    const int64_t id = db_.LastInsertRowId();

    ARTUNE_RETURN_IF_ERROR(
        sweeps::InsertTextPairs(db_, "bench_run_config", "run_id", "knob", id, run.config));
    ARTUNE_RETURN_IF_ERROR(
        sweeps::InsertTextPairs(db_, "bench_run_parameters", "run_id", "name", id, run.parameters));
    ARTUNE_RETURN_IF_ERROR(transaction.Commit());
    return id;
  }

  Result<std::vector<BenchRun>> ListBenchRuns(int limit) override {
    return ListNewestFirst(db_, kRunTable, limit, ReadRunRow,
                           [this](BenchRun& run) { return LoadPairs(run); });
  }

  Result<BenchRun> GetBenchRun(int64_t id) override {
    return GetRecord(db_, kRunTable, id, ReadRunRow,
                     [this](BenchRun& found) { return LoadPairs(found); });
  }

  Result<int64_t> InsertCapture(const CaptureRecord& capture) override {
    if (capture.backend.empty()) {
      return Status::InvalidArgument("capture has an empty backend: name the probe backend");
    }
    if (capture.profile_json.empty()) {
      return Status::InvalidArgument("capture from backend " + capture.backend +
                                     " has an empty profile_json: store the probe's profile");
    }
    ARTUNE_ASSIGN_OR_RETURN(int64_t lost_events,
                            sweeps::CheckedCount(capture.lost_events, "lost_events", "capture"));
    ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                            Transaction::Begin(db_, Transaction::Kind::kImmediate));
    ARTUNE_ASSIGN_OR_RETURN(Statement insert, db_.Prepare("INSERT INTO captures (" +
                                                          std::string(kCaptureColumns.substr(4)) +
                                                          ") VALUES (?, ?, ?, ?, ?, ?)"));
    ARTUNE_RETURN_IF_ERROR(
        insert.Bind(1, capture.started_at.empty() ? NowIso8601Utc() : capture.started_at));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(2, capture.backend));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(3, capture.process));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(4, capture.duration_s));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(5, lost_events));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(6, capture.profile_json));
    Status inserted = insert.Run();
    if (!inserted.ok()) return inserted.WithContext("cannot store capture");
    const int64_t id = db_.LastInsertRowId();
    ARTUNE_RETURN_IF_ERROR(InsertMethodRows(id, capture.methods));
    ARTUNE_RETURN_IF_ERROR(transaction.Commit());
    return id;
  }

  Result<std::vector<CaptureRecord>> ListCaptures(int limit) override {
    return ListNewestFirst(db_, kCaptureTable, limit, ReadCaptureRow,
                           [this](CaptureRecord& capture) { return LoadMethodRows(capture); });
  }

  Result<CaptureRecord> GetCapture(int64_t id) override {
    return GetRecord(db_, kCaptureTable, id, ReadCaptureRow,
                     [this](CaptureRecord& found) { return LoadMethodRows(found); });
  }

  Result<int64_t> InsertSweep(const SweepRecord& sweep) override {
    return sweeps::InsertSweep(db_, sweep, NowIso8601Utc());
  }
  Status FinishSweep(int64_t sweep_id) override {
    return sweeps::FinishSweep(db_, sweep_id, NowIso8601Utc());
  }
  Status RecordSweepVerdict(int64_t sweep_id, const SweepVerdict& verdict) override {
    return sweeps::RecordSweepVerdict(db_, sweep_id, verdict, NowIso8601Utc());
  }
  Result<std::vector<SweepRecord>> ListSweeps(int limit) override {
    return sweeps::ListSweeps(db_, limit);
  }
  Result<SweepRecord> GetSweep(int64_t id) override { return sweeps::GetSweep(db_, id); }
  Result<int64_t> InsertTrial(const TrialRecord& trial) override {
    return sweeps::InsertTrial(db_, trial, NowIso8601Utc());
  }
  Result<std::vector<TrialRecord>> ListTrials(int64_t sweep_id) override {
    return sweeps::ListTrials(db_, sweep_id);
  }
  Result<std::optional<TrialRecord>> BestTrial(int64_t sweep_id) override {
    return sweeps::BestTrial(db_, sweep_id);
  }

  Result<int64_t> InsertCluster(const ClusterRecord& cluster) override {
    return clusters::InsertCluster(db_, cluster, NowIso8601Utc());
  }
  Status FinishCluster(int64_t cluster_id) override {
    return clusters::FinishCluster(db_, cluster_id, NowIso8601Utc());
  }
  Result<std::vector<ClusterRecord>> ListClusters(int limit) override {
    return clusters::ListClusters(db_, limit);
  }
  Result<ClusterRecord> GetCluster(int64_t id) override { return clusters::GetCluster(db_, id); }
  Status InsertClusterLink(const ClusterLinkRecord& link) override {
    return clusters::InsertClusterLink(db_, link, NowIso8601Utc());
  }
  Result<std::vector<ClusterLinkRecord>> ListClusterLinks(int64_t cluster_id) override {
    return clusters::ListClusterLinks(db_, cluster_id);
  }
  Result<int64_t> InsertLinkModel(const LinkModelRecord& model) override {
    return models::InsertLinkModel(db_, model, NowIso8601Utc());
  }
  Result<std::vector<LinkModelRecord>> ListLinkModels(int limit) override {
    return models::ListLinkModels(db_, limit);
  }
  Result<LinkModelRecord> GetLinkModel(int64_t id) override {
    return models::GetLinkModel(db_, id);
  }
  Result<int64_t> InsertPrediction(const PredictionRecord& prediction) override {
    return models::InsertPrediction(db_, prediction, NowIso8601Utc());
  }
  Result<std::vector<PredictionRecord>> ListPredictions(int limit) override {
    return models::ListPredictions(db_, limit);
  }
  Result<PredictionRecord> GetPrediction(int64_t id) override {
    return models::GetPrediction(db_, id);
  }
  Result<int64_t> InsertWatchEvent(const WatchEventRecord& event) override {
    return watch::InsertWatchEvent(db_, event, NowIso8601Utc());
  }
  Result<std::vector<WatchEventRecord>> ListWatchEvents(int limit) override {
    return watch::ListWatchEvents(db_, limit);
  }

  Status CheckWritable() override { return CheckDatabaseWritable(db_); }
  Result<std::unique_ptr<Store>> CopyToMemory() override {
    ARTUNE_ASSIGN_OR_RETURN(Database copy, CopyDatabaseToMemory(db_));
    // A store read-only to this user may be at an older schema: the copy is not.
    ARTUNE_RETURN_IF_ERROR(Migrate(copy, BuiltinMigrations()));
    return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(copy)));
  }

  Result<StoreInfo> Info() override {
    StoreInfo info;
    info.path = db_.path();
    ARTUNE_ASSIGN_OR_RETURN(auto transaction,
                            Transaction::Begin(db_, Transaction::Kind::kDeferred));
    ARTUNE_ASSIGN_OR_RETURN(int64_t version, db_.QueryInt64("PRAGMA user_version"));
    info.schema_version = static_cast<int>(version);
    ARTUNE_ASSIGN_OR_RETURN(
        Statement tables,
        db_.Prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE "
                    "'sqlite\\_%' ESCAPE '\\' ORDER BY name"));
    std::vector<std::string> names;
    while (true) {
      ARTUNE_ASSIGN_OR_RETURN(bool has_row, tables.Step());
      if (!has_row) break;
      names.push_back(tables.ColumnText(0));
    }
    for (const std::string& name : names) {
      // A table name cannot be a bound parameter; quote it as an identifier.
      std::string quoted = "\"";
      for (char c : name) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
      quoted += "\"";
      ARTUNE_ASSIGN_OR_RETURN(info.row_counts[name],
                              db_.QueryInt64("SELECT count(*) FROM " + quoted));
    }
    ARTUNE_RETURN_IF_ERROR(transaction.Commit());
    info.file_bytes = FileBytes(db_.path());
    info.wal_bytes = FileBytes(db_.path() + "-wal");
    return info;
  }

 private:
  Status InsertMethodRows(int64_t capture_id, const std::vector<CaptureMethodRow>& rows) {
    if (rows.empty()) return Status::Ok();
    ARTUNE_ASSIGN_OR_RETURN(
        Statement insert,
        db_.Prepare("INSERT INTO capture_methods (capture_id, method, direction, messages, bytes, "
                    "scheme, small, medium, large) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    for (const CaptureMethodRow& row : rows) {
      if (row.method.empty()) {
        return Status::InvalidArgument("capture has a method row with an empty method name (" +
                                       row.direction + "): every row needs a method");
      }
      ARTUNE_ASSIGN_OR_RETURN(int64_t messages,
                              sweeps::CheckedCount(row.messages, "messages", "capture"));
      ARTUNE_ASSIGN_OR_RETURN(int64_t bytes, sweeps::CheckedCount(row.bytes, "bytes", "capture"));
      ARTUNE_ASSIGN_OR_RETURN(int64_t small, sweeps::CheckedCount(row.small, "small", "capture"));
      ARTUNE_ASSIGN_OR_RETURN(int64_t medium,
                              sweeps::CheckedCount(row.medium, "medium", "capture"));
      ARTUNE_ASSIGN_OR_RETURN(int64_t large, sweeps::CheckedCount(row.large, "large", "capture"));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(1, capture_id));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(2, row.method));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(3, row.direction));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(4, messages));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(5, bytes));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(6, row.scheme));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(7, small));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(8, medium));
      ARTUNE_RETURN_IF_ERROR(insert.Bind(9, large));
      Status inserted = insert.Run();
      if (!inserted.ok()) {
        // The primary key (capture_id, method, direction) rejects a repeat.
        if (inserted.message().find("UNIQUE") != std::string::npos) {
          return Status::InvalidArgument("capture lists method " + row.method + " (" +
                                         row.direction + ") twice: merge the rows before storing");
        }
        return inserted.WithContext("cannot store capture method " + row.method);
      }
      ARTUNE_RETURN_IF_ERROR(insert.Reset());
    }
    return Status::Ok();
  }

  Status LoadMethodRows(CaptureRecord& capture) {
    ARTUNE_ASSIGN_OR_RETURN(
        Statement select,
        db_.Prepare("SELECT method, direction, messages, bytes, scheme, small, medium, large "
                    "FROM capture_methods WHERE capture_id = ? ORDER BY method, direction"));
    ARTUNE_RETURN_IF_ERROR(select.Bind(1, capture.id));
    while (true) {
      ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
      if (!has_row) return Status::Ok();
      CaptureMethodRow row;
      row.method = select.ColumnText(0);
      row.direction = select.ColumnText(1);
      row.messages = static_cast<uint64_t>(select.ColumnInt64(2));
      row.bytes = static_cast<uint64_t>(select.ColumnInt64(3));
      row.scheme = select.ColumnText(4);
      row.small = static_cast<uint64_t>(select.ColumnInt64(5));
      row.medium = static_cast<uint64_t>(select.ColumnInt64(6));
      row.large = static_cast<uint64_t>(select.ColumnInt64(7));
      capture.methods.push_back(std::move(row));
    }
  }

  Status LoadPairs(BenchRun& run) {
    ARTUNE_RETURN_IF_ERROR(sweeps::LoadTextPairs(
        db_, "SELECT knob, value FROM bench_run_config WHERE run_id = ?", run.id, run.config));
    return sweeps::LoadTextPairs(db_,
                                 "SELECT name, value FROM bench_run_parameters WHERE run_id = ?",
                                 run.id, run.parameters);
  }

  Database db_;
};

Status PrepareDirectory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error) {
    return Status::IoError("cannot create directory " + parent.string() + " for the database " +
                           path + ": " + error.message() + " (pass --db with a writable path)");
  }
  return Status::Ok();
}

// True when this process may write the store: the file itself, and its directory
// (where SQLite creates the -wal and -shm files next to it).
bool WritableStore(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  return access(path.c_str(), W_OK) == 0 && access(parent.c_str(), W_OK) == 0;
}

// A URI that opens `path` as a file nobody changes while it is open (SQLite's
// immutable=1: no locks, no -shm). Only for stores nobody here can write.
std::string ImmutableUri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
      uri += escaped;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

Result<std::unique_ptr<Store>> OpenWithMigrations(const std::string& path, OpenMode mode,
                                                  std::span<const Migration> migrations) {
  if (path.empty()) return Status::InvalidArgument("the database path is empty");
  int flags = SQLITE_OPEN_READWRITE;
  bool read_only = false;
  if (mode == OpenMode::kCreate) {
    ARTUNE_RETURN_IF_ERROR(PrepareDirectory(path));
    flags |= SQLITE_OPEN_CREATE;
  } else {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
      return Status::NotFound("no artune database at " + path +
                              ": `artune bench` records runs there, or pass --db with the path "
                              "of an existing database");
    }
    // A reader must not need write access: a store shared read-only (another
    // user's results, a read-only mount) is opened read-only.
    if (!WritableStore(path)) {
      read_only = true;
      flags = SQLITE_OPEN_READONLY;
    }
  }
  ARTUNE_ASSIGN_OR_RETURN(Database db, Database::Open(path, flags));
  ARTUNE_RETURN_IF_ERROR(db.Exec("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs)));

  // The first read of the file: SQLite reports a file that is not a database (or a
  // damaged one) here, as kCorruption.
  Result<int64_t> objects = db.QueryInt64("SELECT count(*) FROM sqlite_schema");
  if (!objects.ok() && read_only && objects.status().code() != ErrorCode::kCorruption) {
    // A WAL store in a directory we cannot write has no -shm file to share with
    // writers, and there can be none: read it as an immutable file instead.
    ARTUNE_ASSIGN_OR_RETURN(
        db, Database::Open(ImmutableUri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path));
    objects = db.QueryInt64("SELECT count(*) FROM sqlite_schema");
  }
  if (!objects.ok()) {
    if (objects.status().code() != ErrorCode::kCorruption) return objects.status();
    return Status::Corruption(path + " is not a SQLite database, or is damaged (" +
                              objects.status().message() +
                              "): pass --db with the path of an artune database");
  }
  // Look before touching anything: switching another application's file to WAL
  // would change it.
  ARTUNE_ASSIGN_OR_RETURN(const int version,
                          ReadSchemaVersion(db, static_cast<int>(migrations.size())));
  if (read_only) {
    if (version < static_cast<int>(migrations.size())) {
      return Status::PermissionDenied(
          path + " is read-only to this user and has schema version " + std::to_string(version) +
          " where this build reads version " + std::to_string(migrations.size()) +
          ": open it once as a user who may write it (e.g. `artune db info` as its owner) to "
          "migrate it, or copy it somewhere writable and pass --db");
    }
    return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(db)));
  }

  ARTUNE_ASSIGN_OR_RETURN(std::string journal_mode, db.QueryText("PRAGMA journal_mode = WAL"));
  if (journal_mode != "wal") {
    return Status::IoError("cannot switch " + path + " to WAL mode (journal_mode stays \"" +
                           journal_mode +
                           "\"): the file system may lack shared-memory support; pass --db with "
                           "a path on a local file system");
  }
  ARTUNE_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys = ON"));
  // With WAL, NORMAL loses no committed transaction when a process dies, only the
  // last ones on power loss; FULL would fsync on every run.
  ARTUNE_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous = NORMAL"));
  ARTUNE_RETURN_IF_ERROR(Migrate(db, migrations));
  return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(db)));
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, OpenMode mode) {
  return OpenWithMigrations(path, mode, BuiltinMigrations());
}

Result<std::unique_ptr<Store>> Store::OpenInMemory() {
  ARTUNE_ASSIGN_OR_RETURN(Database db, OpenMemoryDatabase());
  ARTUNE_RETURN_IF_ERROR(Migrate(db, BuiltinMigrations()));
  return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(db)));
}

}  // namespace artune::db
