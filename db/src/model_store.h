// Link models and predictions on a SQLite connection: the part of SqliteStore
// (store.cc) that schema v9 added. Each function runs its own transaction; the
// contracts are those of the matching Store methods in store.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "sqlite.h"

namespace artune::db::models {

// `now` is the ISO 8601 UTC time used for an empty created_at.
Result<int64_t> InsertLinkModel(sqlite::Database& db, const LinkModelRecord& model,
                                const std::string& now);
Result<std::vector<LinkModelRecord>> ListLinkModels(sqlite::Database& db, int limit);
Result<LinkModelRecord> GetLinkModel(sqlite::Database& db, int64_t id);

Result<int64_t> InsertPrediction(sqlite::Database& db, const PredictionRecord& prediction,
                                 const std::string& now);
Result<std::vector<PredictionRecord>> ListPredictions(sqlite::Database& db, int limit);
Result<PredictionRecord> GetPrediction(sqlite::Database& db, int64_t id);

}  // namespace artune::db::models
