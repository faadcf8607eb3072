// A sweep's verdict, its re-measured default and best, and its final round's
// finalists on a SQLite connection: the part of SqliteStore (store.cc) that schemas
// v4 to v6 added. The contract of RecordSweepVerdict
// is Store::RecordSweepVerdict's (store.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "artune/db/store.h"
#include "sqlite.h"

namespace artune::db::sweeps {

// Replaces the sweep's verdict in its own IMMEDIATE transaction. `now` is the ISO
// 8601 UTC time used for an empty decided_at / default_remeasured->started_at.
Status RecordSweepVerdict(sqlite::Database& db, int64_t sweep_id, const SweepVerdict& verdict,
                          const std::string& now);

// The sweep's verdict, or nullopt when it has none. Opens no transaction: the
// caller reads it inside the one that read the sweep, so both come from one
// snapshot.
Result<std::optional<SweepVerdict>> LoadSweepVerdict(sqlite::Database& db, int64_t sweep_id);

}  // namespace artune::db::sweeps
