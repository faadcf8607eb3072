#include "sweep_verdict_store.h"

#include <string_view>

#include "sweep_store.h"

namespace artune::db::sweeps {
namespace {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

// The two measurements taken back to back at the end of a sweep, each in a table of
// its own with its metrics beside it (the default since schema v4, the best since v5).
struct RemeasuredTables {
  std::string_view table;
  std::string_view metrics_table;
  std::string_view record;  // for error messages
};
constexpr RemeasuredTables kDefaultAgain = {
    "sweep_default_remeasured", "sweep_default_remeasured_metrics", "re-measured default"};
constexpr RemeasuredTables kBestAgain = {"sweep_best_remeasured", "sweep_best_remeasured_metrics",
                                         "re-measured best"};

bool IsVerdict(std::string_view text) {
  return text == kVerdictBeatsDefault || text == kVerdictWithinNoise ||
         text == kVerdictDefaultIsBest || text == kVerdictNoValidTrial;
}

Status CheckRemeasured(const TrialRecord& again, std::string_view record);

Status CheckVerdict(const SweepVerdict& verdict) {
  if (!IsVerdict(verdict.verdict)) {
    return Status::InvalidArgument(
        "sweep verdict \"" + verdict.verdict + "\" is not one of " +
        std::string(kVerdictBeatsDefault) + ", " + std::string(kVerdictWithinNoise) + ", " +
        std::string(kVerdictDefaultIsBest) + ", " + std::string(kVerdictNoValidTrial));
  }
  const bool no_best = verdict.verdict == kVerdictNoValidTrial;
  if (no_best != verdict.best_knobs.empty()) {
    return Status::InvalidArgument(
        "sweep verdict " + verdict.verdict + " with best_knobs \"" + verdict.best_knobs +
        "\": the best trial's knob key is given for every verdict but " +
        std::string(kVerdictNoValidTrial) + ", and only then left empty");
  }
  if (!no_best) {
    ARTUNE_RETURN_IF_ERROR(
        ParseTrialKnobKey(verdict.best_knobs).status().WithContext("sweep verdict's best_knobs"));
  }
  if (verdict.default_remeasured) {
    ARTUNE_RETURN_IF_ERROR(CheckRemeasured(*verdict.default_remeasured, kDefaultAgain.record));
  }
  if (verdict.best_remeasured) {
    ARTUNE_RETURN_IF_ERROR(CheckRemeasured(*verdict.best_remeasured, kBestAgain.record));
  }
  return Status::Ok();
}

Status CheckRemeasured(const TrialRecord& again, std::string_view record) {
  ARTUNE_RETURN_IF_ERROR(CheckKnobs(again.knobs).WithContext(std::string(record)));
  if (again.status != "ok" && again.status != "invalid" && again.status != "failed") {
    return Status::InvalidArgument(std::string(record) + " status \"" + again.status +
                                   "\" is not one of ok, invalid, failed");
  }
  ARTUNE_RETURN_IF_ERROR(CheckFinite(again.objective, "objective", record));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(again.ci_low, "ci_low", record));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(again.ci_high, "ci_high", record));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(again.duration_s, "duration_s", record));
  for (const auto& [name, value] : again.metrics) {
    if (name.empty()) {
      return Status::InvalidArgument(std::string(record) + " has a metric with an empty name");
    }
    ARTUNE_RETURN_IF_ERROR(CheckFinite(value, "metric " + name, record));
  }
  ARTUNE_RETURN_IF_ERROR(CheckedCount(again.samples, "samples", record).status());
  return CheckedCount(again.remeasured, "remeasured", record).status();
}

Status InsertRemeasured(Database& db, const RemeasuredTables& tables, int64_t sweep_id,
                        const TrialRecord& again, const std::string& now) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO " + std::string(tables.table) +
                 " (sweep_id, knobs, status, objective, ci_low, ci_high, samples, remeasured, "
                 "validated, error, measured_at, duration_s) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, sweep_id));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, TrialKnobKey(again.knobs)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.status));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.objective));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.ci_low));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.ci_high));
  // Both counts were checked against INT64_MAX by CheckVerdict.
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, static_cast<int64_t>(again.samples)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, static_cast<int64_t>(again.remeasured)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.validated));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.error));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.started_at.empty() ? now : again.started_at));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, again.duration_s));
  ARTUNE_RETURN_IF_ERROR(
      insert.Run().WithContext("cannot store the sweep's " + std::string(tables.record)));
  if (again.metrics.empty()) return Status::Ok();
  ARTUNE_ASSIGN_OR_RETURN(Statement metric,
                          db.Prepare("INSERT INTO " + std::string(tables.metrics_table) +
                                     " (sweep_id, name, value) VALUES (?, ?, ?)"));
  for (const auto& [name, value] : again.metrics) {
    ARTUNE_RETURN_IF_ERROR(metric.Bind(1, sweep_id));
    ARTUNE_RETURN_IF_ERROR(metric.Bind(2, name));
    ARTUNE_RETURN_IF_ERROR(metric.Bind(3, value));
    ARTUNE_RETURN_IF_ERROR(metric.Run());
    ARTUNE_RETURN_IF_ERROR(metric.Reset());
  }
  return Status::Ok();
}

Result<std::optional<TrialRecord>> LoadRemeasured(Database& db, const RemeasuredTables& tables,
                                                  int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement select,
      // The columns ReadTrialRow reads; the re-measurement is not a trial (id 0).
      db.Prepare("SELECT 0, sweep_id, knobs, status, objective, ci_low, ci_high, samples, "
                 "remeasured, validated, error, measured_at, duration_s FROM " +
                 std::string(tables.table) + " WHERE sweep_id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::optional<TrialRecord>();
  ARTUNE_ASSIGN_OR_RETURN(TrialRecord again, sweeps::ReadTrialRow(select));
  ARTUNE_ASSIGN_OR_RETURN(
      Statement metrics, db.Prepare("SELECT name, value FROM " + std::string(tables.metrics_table) +
                                    " WHERE sweep_id = ?"));
  ARTUNE_RETURN_IF_ERROR(metrics.Bind(1, sweep_id));
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_metric, metrics.Step());
    if (!has_metric) break;
    again.metrics.emplace(metrics.ColumnText(0), metrics.ColumnDouble(1));
  }
  return std::optional<TrialRecord>(std::move(again));
}

}  // namespace

Status RecordSweepVerdict(Database& db, int64_t sweep_id, const SweepVerdict& verdict,
                          const std::string& now) {
  ARTUNE_RETURN_IF_ERROR(CheckVerdict(verdict));
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_RETURN_IF_ERROR(SweepGoal(db, sweep_id).status());
  // Replacing: the cascade removes the old re-measurement and its metrics.
  ARTUNE_ASSIGN_OR_RETURN(Statement remove,
                          db.Prepare("DELETE FROM sweep_verdicts WHERE sweep_id = ?"));
  ARTUNE_RETURN_IF_ERROR(remove.Bind(1, sweep_id));
  ARTUNE_RETURN_IF_ERROR(remove.Run());
  ARTUNE_ASSIGN_OR_RETURN(Statement insert,
                          db.Prepare("INSERT INTO sweep_verdicts (sweep_id, verdict, best_knobs, "
                                     "decided_at) VALUES (?, ?, ?, ?)"));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(1, sweep_id));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(2, verdict.verdict));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(3, verdict.best_knobs));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(4, verdict.decided_at.empty() ? now : verdict.decided_at));
  ARTUNE_RETURN_IF_ERROR(
      insert.Run().WithContext("cannot store the verdict of sweep " + std::to_string(sweep_id)));
  if (verdict.default_remeasured) {
    ARTUNE_RETURN_IF_ERROR(
        InsertRemeasured(db, kDefaultAgain, sweep_id, *verdict.default_remeasured, now));
  }
  if (verdict.best_remeasured) {
    ARTUNE_RETURN_IF_ERROR(
        InsertRemeasured(db, kBestAgain, sweep_id, *verdict.best_remeasured, now));
  }
  return transaction.Commit();
}

Result<std::optional<SweepVerdict>> LoadSweepVerdict(Database& db, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare("SELECT verdict, best_knobs, decided_at FROM sweep_verdicts WHERE sweep_id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::optional<SweepVerdict>();
  SweepVerdict verdict;
  verdict.verdict = select.ColumnText(0);
  verdict.best_knobs = select.ColumnText(1);
  verdict.decided_at = select.ColumnText(2);
  ARTUNE_ASSIGN_OR_RETURN(verdict.default_remeasured, LoadRemeasured(db, kDefaultAgain, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(verdict.best_remeasured, LoadRemeasured(db, kBestAgain, sweep_id));
  return std::optional<SweepVerdict>(std::move(verdict));
}

}  // namespace artune::db::sweeps
