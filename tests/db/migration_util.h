// Shared by the migration tests: a store file as an older build left it (the first
// N migrations only), then the same file opened by this build.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace artune::db::testing
