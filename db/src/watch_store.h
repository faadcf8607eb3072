// `artune watch`'s decisions on a SQLite connection: the part of SqliteStore
// (store.cc) that schema v10 added. The contracts are those of the matching Store
// methods in store.h.
#pragma once

#include <string>
#include <vector>

#include "artune/db/store.h"
#include "sqlite.h"

namespace artune::db::watch {

// `now` is the ISO 8601 UTC time used for an empty `at`.
Result<int64_t> InsertWatchEvent(sqlite::Database& db, const WatchEventRecord& event,
                                 const std::string& now);
Result<std::vector<WatchEventRecord>> ListWatchEvents(sqlite::Database& db, int limit);

}  // namespace artune::db::watch
