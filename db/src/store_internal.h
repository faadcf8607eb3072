// What the store's tests (and nothing else) reach past store.h for.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "artune/db/store.h"
#include "migrations.h"

namespace artune::db {

// Store::Open with a chosen migration list instead of BuiltinMigrations(), so a test
// can build a file at version 1 and reopen it with a list that adds a version 2.
Result<std::unique_ptr<Store>> OpenWithMigrations(const std::string& path, OpenMode mode,
                                                  std::span<const Migration> migrations);

}  // namespace artune::db
