// The RAII wrappers over SQLite's C API.
#include "sqlite.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace artune::db::sqlite {
namespace {

using artune::db::testing::TempDir;

Database OpenScratch(const TempDir& dir) {
  auto db = Database::Open(dir.File("scratch.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  Database result = std::move(db).value();
  EXPECT_TRUE(result.Exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT UNIQUE)").ok());
  return result;
}

int64_t CountRows(Database& db) {
  auto count = db.QueryInt64("SELECT count(*) FROM t");
  EXPECT_TRUE(count.ok()) << count.status().ToString();
  return count.ok() ? *count : -1;
}

TEST(SqliteWrapper, BindsAndReadsEveryType) {
  TempDir dir;
  Database db = OpenScratch(dir);
  auto insert = db.Prepare("INSERT INTO t (i, r, s) VALUES (?, ?, ?)");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  ASSERT_TRUE(insert->Bind(1, int64_t{9007199254740993}).ok());  // not exact as a double
  ASSERT_TRUE(insert->Bind(2, 0.125).ok());
  const std::string text("with\0nul", 8);
  ASSERT_TRUE(insert->Bind(3, std::string_view(text)).ok());
  ASSERT_TRUE(insert->Run().ok());

  auto select = db.Prepare("SELECT i, r, s, NULL FROM t");
  ASSERT_TRUE(select.ok());
  auto has_row = select->Step();
  ASSERT_TRUE(has_row.ok());
  ASSERT_TRUE(*has_row);
  EXPECT_EQ(select->ColumnInt64(0), int64_t{9007199254740993});
  EXPECT_EQ(select->ColumnDouble(1), 0.125);
  EXPECT_EQ(select->ColumnText(2), text);
  EXPECT_TRUE(select->ColumnIsNull(3));
  EXPECT_FALSE(select->ColumnIsNull(0));
  has_row = select->Step();
  ASSERT_TRUE(has_row.ok());
  EXPECT_FALSE(*has_row);
}

TEST(SqliteWrapper, ResetAllowsReuseWithNewBindings) {
  TempDir dir;
  Database db = OpenScratch(dir);
  auto insert = db.Prepare("INSERT INTO t (i, s) VALUES (?, ?)");
  ASSERT_TRUE(insert.ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(insert->Bind(1, i).ok());
    ASSERT_TRUE(insert->Bind(2, "row" + std::to_string(i)).ok());
    ASSERT_TRUE(insert->Run().ok());
    ASSERT_TRUE(insert->Reset().ok());
  }
  EXPECT_EQ(CountRows(db), 3);
  auto sum = db.QueryInt64("SELECT sum(i) FROM t");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, 3);
}

TEST(SqliteWrapper, TransactionRollsBackUnlessCommitted) {
  TempDir dir;
  Database db = OpenScratch(dir);
  {
    auto transaction = Transaction::Begin(db, Transaction::Kind::kImmediate);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(db.Exec("INSERT INTO t (i) VALUES (1)").ok());
    EXPECT_EQ(CountRows(db), 1);  // visible inside the transaction
  }
  EXPECT_EQ(CountRows(db), 0);
  {
    auto transaction = Transaction::Begin(db, Transaction::Kind::kImmediate);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(db.Exec("INSERT INTO t (i) VALUES (1)").ok());
    ASSERT_TRUE(transaction->Commit().ok());
    EXPECT_FALSE(transaction->Commit().ok());  // a second commit is a caller bug
  }
  EXPECT_EQ(CountRows(db), 1);
}

TEST(SqliteWrapper, MovedTransactionRollsBackOnce) {
  TempDir dir;
  Database db = OpenScratch(dir);
  {
    auto begun = Transaction::Begin(db, Transaction::Kind::kDeferred);
    ASSERT_TRUE(begun.ok());
    Transaction moved = std::move(begun).value();
    ASSERT_TRUE(db.Exec("INSERT INTO t (i) VALUES (7)").ok());
  }
  EXPECT_EQ(CountRows(db), 0);
  // The connection is usable afterwards: no transaction was left open.
  EXPECT_TRUE(db.Exec("BEGIN; COMMIT;").ok());
}

TEST(SqliteWrapper, ErrorsMapToStatusCodes) {
  TempDir dir;
  Database db = OpenScratch(dir);
  Status bad_sql = db.Exec("SELEC nonsense");
  EXPECT_EQ(bad_sql.code(), ErrorCode::kInternal);
  EXPECT_NE(bad_sql.message().find("syntax error"), std::string::npos) << bad_sql.message();

  auto missing_table = db.Prepare("SELECT * FROM no_such_table");
  ASSERT_FALSE(missing_table.ok());
  EXPECT_NE(missing_table.status().message().find("no_such_table"), std::string::npos);

  ASSERT_TRUE(db.Exec("INSERT INTO t (s) VALUES ('same')").ok());
  auto duplicate = db.Prepare("INSERT INTO t (s) VALUES ('same')");
  ASSERT_TRUE(duplicate.ok());
  Status constraint = duplicate->Run();
  EXPECT_EQ(constraint.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(constraint.message().find("UNIQUE"), std::string::npos) << constraint.message();
}

TEST(SqliteWrapper, OpenFailureNamesThePath) {
  TempDir dir;
  const std::string path = dir.File("missing/dir/x.db");
  auto db = Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), ErrorCode::kIoError);
  EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status().message();
}

}  // namespace
}  // namespace artune::db::sqlite
