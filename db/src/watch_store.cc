#include "watch_store.h"

#include <string_view>

#include "record_table.h"
#include "sweep_store.h"

namespace artune::db::watch {
namespace {

using sqlite::Database;
using sqlite::Statement;

constexpr std::string_view kEventColumns =
    "id, at, servers, action, reason, drift, window_slices, in_force_knobs, candidate_knobs, "
    "predicted_margin, paired_median, paired_low, paired_high, pairs, verdict, profile_json";
constexpr RecordTable kEventTable = {"watch_events", kEventColumns, "at", "watch event",
                                     "watch events"};

WatchEventRecord ReadEventRow(const Statement& row) {
  WatchEventRecord event;
  int column = 0;
  event.id = row.ColumnInt64(column++);
  event.at = row.ColumnText(column++);
  event.servers = row.ColumnText(column++);
  // The table's CHECK admits only WatchActionName's words.
  event.action = ParseWatchAction(row.ColumnText(column++)).value_or(WatchAction::kKeep);
  event.reason = row.ColumnText(column++);
  event.drift = row.ColumnDouble(column++);
  event.window_slices = static_cast<uint64_t>(row.ColumnInt64(column++));
  event.in_force_knobs = row.ColumnText(column++);
  event.candidate_knobs = row.ColumnText(column++);
  event.predicted_margin = row.ColumnDouble(column++);
  event.paired_median = row.ColumnDouble(column++);
  event.paired_low = row.ColumnDouble(column++);
  event.paired_high = row.ColumnDouble(column++);
  event.pairs = static_cast<uint32_t>(row.ColumnInt64(column++));
  event.verdict = row.ColumnText(column++);
  event.profile_json = row.ColumnText(column++);
  return event;
}

Status CheckEvent(const WatchEventRecord& event) {
  if (event.servers.empty()) return Status::InvalidArgument("watch event names no server");
  if (event.reason.empty()) return Status::InvalidArgument("watch event has no reason");
  if (!(event.drift >= 0 && event.drift <= 1)) {
    return Status::InvalidArgument("watch event drift " + std::to_string(event.drift) +
                                   " is outside 0..1");
  }
  for (double value :
       {event.predicted_margin, event.paired_median, event.paired_low, event.paired_high}) {
    ARTUNE_RETURN_IF_ERROR(sweeps::CheckFinite(value, "figure", "watch event"));
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> InsertWatchEvent(Database& db, const WatchEventRecord& event,
                                 const std::string& now) {
  ARTUNE_RETURN_IF_ERROR(CheckEvent(event));
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO watch_events (" + std::string(kEventColumns.substr(4)) +
                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.BindEach(
      column, event.at.empty() ? now : event.at, event.servers,
      std::string(WatchActionName(event.action)), event.reason, event.drift,
      static_cast<int64_t>(event.window_slices), event.in_force_knobs, event.candidate_knobs,
      event.predicted_margin, event.paired_median, event.paired_low, event.paired_high,
      static_cast<int64_t>(event.pairs), event.verdict, event.profile_json));
  Status inserted = insert.Run();
  if (!inserted.ok()) return inserted.WithContext("cannot store watch event");
  return db.LastInsertRowId();
}

Result<std::vector<WatchEventRecord>> ListWatchEvents(Database& db, int limit) {
  return ListNewestFirst(db, kEventTable, limit, ReadEventRow,
                         [](WatchEventRecord&) { return Status::Ok(); });
}

}  // namespace artune::db::watch
