// Shared by the migration tests: a store file as an older build left it (the first
// N migrations only), then the same file opened by this build.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "artune/db/store.h"
#include "migrations.h"
#include "store_internal.h"

namespace artune::db::testing {

// The store at `path` made by the first `version` migrations; nullptr, and a test
// failure, when it cannot be made or does not say `version`.
inline std::unique_ptr<Store> OpenAtVersion(const std::string& path, int version) {
  auto old = OpenWithMigrations(path, OpenMode::kCreate,
                                BuiltinMigrations().first(static_cast<size_t>(version)));
  if (!old.ok()) {
    ADD_FAILURE() << "v" << version << ": " << old.status().ToString();
    return nullptr;
  }
  auto info = (*old)->Info();
  if (!info.ok() || info->schema_version != version) {
    ADD_FAILURE() << "the store made by " << version << " migrations says version "
                  << (info.ok() ? std::to_string(info->schema_version) : info.status().ToString());
    return nullptr;
  }
  return std::move(old).value();
}

// A row an older build stored: the id `insert(store)` returns for the store at
// `path` made by the first `version` migrations, a store that must not have
// `new_table` yet (the table the upgrade under test adds; "" checks none). 0, and a
// test failure, when the store cannot be made, has that table, or the insert fails.
template <typename Insert>
int64_t InsertAtVersion(const std::string& path, int version, const std::string& new_table,
                        Insert insert) {
  std::unique_ptr<Store> old = OpenAtVersion(path, version);
  if (old == nullptr) return 0;
  if (!new_table.empty()) {
    EXPECT_EQ(old->Info()->row_counts.count(new_table), 0u);
  }
  Result<int64_t> id = insert(*old);
  if (!id.ok()) {
    ADD_FAILURE() << "v" << version << ": " << id.status().ToString();
    return 0;
  }
  return *id;
}

// The row counts of the store at `path` opened by this build (every migration run,
// OpenMode::kExisting); empty, and a test failure, when it cannot be opened or its
// schema is not the latest. `store` receives the open store.
inline StoreInfo OpenMigrated(const std::string& path, std::unique_ptr<Store>& store) {
  auto opened = Store::Open(path, OpenMode::kExisting);
  if (!opened.ok()) {
    ADD_FAILURE() << opened.status().ToString();
    return {};
  }
  store = std::move(opened).value();
  auto info = store->Info();
  if (!info.ok()) {
    ADD_FAILURE() << info.status().ToString();
    return {};
  }
  EXPECT_EQ(info->schema_version, static_cast<int>(BuiltinMigrations().size()));
  return *info;
}

// A store upgraded by this build with a row an older build stored in it.
struct UpgradedStore {
  int64_t old_row = 0;           // the row's id (InsertAtVersion)
  std::unique_ptr<Store> store;  // this build's (OpenMigrated); nullptr when anything failed
  StoreInfo info;                // its row counts once upgraded
};

// InsertAtVersion, then OpenMigrated of the same file, whose row counts must then be
// `rows` (table, rows), each checked.
template <typename Insert>
UpgradedStore UpgradeWithRow(const std::string& path, int version, const std::string& new_table,
                             Insert insert, const std::map<std::string, int64_t>& rows) {
  UpgradedStore upgraded;
  upgraded.old_row = InsertAtVersion(path, version, new_table, insert);
  if (upgraded.old_row == 0) return upgraded;
  upgraded.info = OpenMigrated(path, upgraded.store);
  for (const auto& [table, count] : rows) {
    const auto found = upgraded.info.row_counts.find(table);
    EXPECT_TRUE(found != upgraded.info.row_counts.end() && found->second == count)
        << table << ": " << count << " rows expected after the upgrade from v" << version;
  }
  return upgraded;
}

}  // namespace artune::db::testing
