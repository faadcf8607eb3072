// Opening, WAL mode, schema versions and migrations.
#include "migrations.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "artune/db/store.h"
#include "sqlite.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

// A raw connection for looking at a file from outside the store.
sqlite::Database Inspect(const std::string& path) {
  auto db = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return std::move(db).value();
}

int64_t QueryInt(const std::string& path, const std::string& sql) {
  sqlite::Database db = Inspect(path);
  auto value = db.QueryInt64(sql);
  EXPECT_TRUE(value.ok()) << value.status().ToString();
  return value.ok() ? *value : -1;
}

// Builtin migrations plus a version 2 that adds a column and a table.
std::vector<Migration> MigrationsWithV2() {
  std::vector<Migration> list(BuiltinMigrations().begin(), BuiltinMigrations().end());
  list.push_back({static_cast<int>(list.size()) + 1, "test: notes on runs",
                  "ALTER TABLE bench_runs ADD COLUMN note TEXT NOT NULL DEFAULT 'none';"
                  "CREATE TABLE test_extra (id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES "
                  "bench_runs (id));"});
  return list;
}

// 64-bit FNV-1a: a digest that is the same on every platform and build.
uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

// A released migration's text is what files in the field were built by, and SQLite
// keeps it in sqlite_schema: it must never change, even now that migrations.cc
// builds it from column lists. These are the digests of the text as released
// (version: bytes, digest).
TEST(Migrations, ReleasedTextIsUnchanged) {
  struct Released {
    size_t bytes;
    uint64_t digest;
  };
  const std::vector<Released> released = {
      {1460, 0xcce248d2b5e679f3ULL}, {1070, 0x17849e31ed5d0675ULL}, {2564, 0x4867d58ec67cda06ULL},
      {1354, 0x6ac85301b65174a8ULL}, {930, 0x251b7c5f232922e0ULL},  {1243, 0xb7ac2aaf87818ea0ULL},
      {1629, 0xce55afe18f2bb8edULL},
  };
  const std::span<const Migration> migrations = BuiltinMigrations();
  ASSERT_GE(migrations.size(), released.size());
  for (size_t i = 0; i < released.size(); ++i) {
    SCOPED_TRACE("migration " + std::to_string(migrations[i].version));
    EXPECT_EQ(migrations[i].sql.size(), released[i].bytes);
    EXPECT_EQ(Fnv1a(migrations[i].sql), released[i].digest);
  }
}

TEST(StoreOpen, CreatesFileDirectoryAndLatestSchema) {
  TempDir dir;
  const std::string path = dir.File("nested/deeper/artune.db");
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(path));
  auto info = (*store)->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->path, path);
  EXPECT_EQ(info->schema_version, static_cast<int>(BuiltinMigrations().size()));
  EXPECT_EQ(info->row_counts.at("bench_runs"), 0);
  EXPECT_EQ(info->row_counts.at("bench_run_config"), 0);
  EXPECT_EQ(info->row_counts.at("bench_run_parameters"), 0);
  EXPECT_GT(info->file_bytes, 0u);
  EXPECT_EQ(QueryInt(path, "PRAGMA application_id"), kArtuneApplicationId);
}

TEST(StoreOpen, UsesWriteAheadLog) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(1)).ok());
  // The journal mode is persistent in the file header: a fresh connection sees it.
  sqlite::Database raw = Inspect(path);
  auto mode = raw.QueryText("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ(*mode, "wal");
  // While the store is open after a write, the log file exists next to the database.
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
}

TEST(StoreOpen, ReopeningKeepsDataAndVersion) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(1)).ok());
  }
  auto store = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto runs = (*store)->ListBenchRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

TEST(StoreOpen, ExistingModeRefusesMissingFileWithoutCreatingIt) {
  TempDir dir;
  const std::string path = dir.File("none/artune.db");
  auto store = Store::Open(path, OpenMode::kExisting);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(store.status().message().find(path), std::string::npos);
  EXPECT_NE(store.status().message().find("--db"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.File("none")));
}

TEST(StoreOpen, UncreatableDirectoryIsAnIoErrorNamingIt) {
  TempDir dir;
  std::ofstream(dir.File("a_file")) << "x";
  auto store = Store::Open(dir.File("a_file/artune.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kIoError);
  EXPECT_NE(store.status().message().find(dir.File("a_file")), std::string::npos);
}

TEST(StoreOpen, RefusesAFileThatIsNotSqlite) {
  TempDir dir;
  const std::string path = dir.File("notes.txt");
  std::string garbage(8192, 'z');
  std::ofstream(path, std::ios::binary) << garbage;
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kCorruption);
  EXPECT_NE(store.status().message().find("not a SQLite database"), std::string::npos)
      << store.status().message();
  // Untouched.
  std::ifstream in(path, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, garbage);
}

TEST(StoreOpen, RefusesAnotherApplicationsDatabaseWithoutChangingIt) {
  TempDir dir;
  const std::string path = dir.File("other.db");
  {
    auto raw = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw->Exec("CREATE TABLE contacts (name TEXT)").ok());
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kCorruption);
  EXPECT_NE(store.status().message().find("not an artune one"), std::string::npos)
      << store.status().message();
  sqlite::Database raw = Inspect(path);
  auto mode = raw.QueryText("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ(*mode, "delete");  // not switched to WAL
  EXPECT_EQ(QueryInt(path, "PRAGMA user_version"), 0);
}

TEST(StoreOpen, RefusesAnotherApplicationIdEvenWhenEmpty) {
  TempDir dir;
  const std::string path = dir.File("other.db");
  {
    auto raw = sqlite::Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw->Exec("PRAGMA application_id = 1234").ok());
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kCorruption);
}

TEST(StoreOpen, AcceptsAnEmptyFile) {
  TempDir dir;
  const std::string path = dir.File("empty.db");
  std::ofstream(path).close();  // zero bytes is a valid, empty SQLite database
  auto store = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
}

TEST(Migrations, UpgradeKeepsDataAndAppliesNewSteps) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  int64_t id = 0;
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    auto inserted = (*store)->InsertBenchRun(SampleRun(3, 7));
    ASSERT_TRUE(inserted.ok());
    id = *inserted;
  }
  std::vector<Migration> v2 = MigrationsWithV2();
  auto store = OpenWithMigrations(path, OpenMode::kExisting, v2);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto info = (*store)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->schema_version, static_cast<int>(v2.size()));
  EXPECT_EQ(info->row_counts.at("test_extra"), 0);
  auto run = (*store)->GetBenchRun(id);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->config, SampleRun(3, 7).config);
  EXPECT_EQ(run->parameters, SampleRun(3, 7).parameters);
  // The new column exists and the old row got its default.
  sqlite::Database raw = Inspect(path);
  auto note = raw.QueryText("SELECT note FROM bench_runs WHERE id = " + std::to_string(id));
  ASSERT_TRUE(note.ok()) << note.status().ToString();
  EXPECT_EQ(*note, "none");
  // The store still writes through the v1 columns after the upgrade.
  EXPECT_TRUE((*store)->InsertBenchRun(SampleRun(4)).ok());
}

TEST(Migrations, RefusesNewerSchemaNamingBothVersions) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  std::vector<Migration> v2 = MigrationsWithV2();
  {
    auto store = OpenWithMigrations(path, OpenMode::kCreate, v2);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kCorruption);
  const std::string message = store.status().message();
  const std::string file_version = "schema version " + std::to_string(v2.size());
  const std::string known_version = "up to " + std::to_string(BuiltinMigrations().size());
  EXPECT_NE(message.find(file_version), std::string::npos) << message;
  EXPECT_NE(message.find(known_version), std::string::npos) << message;
}

TEST(Migrations, FailedStepLeavesTheOldVersion) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(1)).ok());
  }
  std::vector<Migration> broken(BuiltinMigrations().begin(), BuiltinMigrations().end());
  // The first statement would succeed; the second fails, so both must roll back.
  broken.push_back({static_cast<int>(broken.size()) + 1, "test: broken",
                    "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);"});
  auto failed = OpenWithMigrations(path, OpenMode::kExisting, broken);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("test: broken"), std::string::npos)
      << failed.status().message();

  EXPECT_EQ(QueryInt(path, "PRAGMA user_version"), static_cast<int>(BuiltinMigrations().size()));
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'half_done'"), 0);
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto runs = (*store)->ListBenchRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

TEST(Migrations, MisnumberedListIsAnInternalError) {
  TempDir dir;
  const Migration gap[] = {{1, "one", "CREATE TABLE a (x);"}, {3, "three", "CREATE TABLE b (x);"}};
  auto store = OpenWithMigrations(dir.File("artune.db"), OpenMode::kCreate, gap);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kInternal);
}

TEST(Migrations, SchemaEnforcesForeignKeysAndCascade) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok());
  auto id = (*store)->InsertBenchRun(SampleRun(1, 4));
  ASSERT_TRUE(id.ok());

  sqlite::Database raw = Inspect(path);
  ASSERT_TRUE(raw.Exec("PRAGMA foreign_keys = ON").ok());
  Status orphan =
      raw.Exec("INSERT INTO bench_run_config (run_id, knob, value) VALUES (999, 'k', 'v')");
  EXPECT_EQ(orphan.code(), ErrorCode::kInvalidArgument) << orphan.ToString();
  ASSERT_TRUE(raw.Exec("DELETE FROM bench_runs WHERE id = " + std::to_string(*id)).ok());
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM bench_run_config"), 0);
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM bench_run_parameters"), 0);
}

}  // namespace
}  // namespace artune::db
