#include "sweep_verdict_store.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

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

Status CheckRemeasured(const TrialRecord& again, std::string_view record);

Status CheckVerdict(const SweepVerdict& verdict) {
  const bool no_best = verdict.verdict == Verdict::kNoValidTrial;
  if (no_best != verdict.best_knobs.empty()) {
    return Status::InvalidArgument(
        "sweep verdict " + std::string(VerdictName(verdict.verdict)) + " with best_knobs \"" +
        verdict.best_knobs + "\": the best trial's knob key is given for every verdict but " +
        std::string(VerdictName(Verdict::kNoValidTrial)) + ", and only then left empty");
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
  if (!verdict.finalists.empty() && verdict.final_rounds == 0) {
    return Status::InvalidArgument(
        "sweep verdict has finalists but final_rounds 0: finalists come from a final round");
  }
  std::set<std::string> finalist_keys;
  for (const FinalistRecord& finalist : verdict.finalists) {
    ARTUNE_RETURN_IF_ERROR(CheckRemeasured(finalist.pooled, "finalist"));
    const std::string key = TrialKnobKey(finalist.pooled.knobs);
    if (!finalist_keys.insert(key).second) {
      return Status::InvalidArgument("sweep verdict lists finalist " + key +
                                     " twice: each config is one finalist");
    }
    if (finalist.rounds_won > verdict.final_rounds) {
      return Status::InvalidArgument(
          "finalist " + key + " won " + std::to_string(finalist.rounds_won) + " of " +
          std::to_string(verdict.final_rounds) + " final rounds: it cannot win more than were run");
    }
  }
  return Status::Ok();
}

Status CheckRemeasured(const TrialRecord& again, std::string_view record) {
  ARTUNE_RETURN_IF_ERROR(CheckKnobs(again.knobs).WithContext(std::string(record)));
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

// The measurement columns every re-measured table shares, in this order.
constexpr std::string_view kMeasurementColumns =
    "knobs, status, objective, ci_low, ci_high, samples, remeasured, validated, error, "
    "measured_at, duration_s";

// Binds kMeasurementColumns from `column` on; leaves `column` one past them.
Status BindMeasurement(Statement& insert, int& column, const TrialRecord& again,
                       const std::string& now) {
  // Both counts were checked against INT64_MAX by CheckVerdict.
  ARTUNE_RETURN_IF_ERROR(insert.BindEach(
      column, TrialKnobKey(again.knobs), TrialStatusName(again.status), again.objective,
      again.ci_low, again.ci_high, static_cast<int64_t>(again.samples),
      static_cast<int64_t>(again.remeasured), again.validated, again.error,
      again.started_at.empty() ? now : again.started_at));
  return insert.Bind(column++, again.duration_s);
}

Status InsertRemeasured(Database& db, const RemeasuredTables& tables, int64_t sweep_id,
                        const TrialRecord& again, const std::string& now) {
  ARTUNE_ASSIGN_OR_RETURN(Statement insert,
                          db.Prepare("INSERT INTO " + std::string(tables.table) + " (sweep_id, " +
                                     std::string(kMeasurementColumns) +
                                     ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, sweep_id));
  ARTUNE_RETURN_IF_ERROR(BindMeasurement(insert, column, again, now));
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
      db.Prepare("SELECT 0, sweep_id, " + std::string(kMeasurementColumns) + " FROM " +
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

// Finalists by rank from 1 (the order given: the winner first), with their metrics.
Status InsertFinalists(Database& db, int64_t sweep_id, const std::vector<FinalistRecord>& finalists,
                       const std::string& now) {
  if (finalists.empty()) return Status::Ok();
  ARTUNE_ASSIGN_OR_RETURN(Statement insert,
                          db.Prepare("INSERT INTO sweep_finalists (sweep_id, rank, " +
                                     std::string(kMeasurementColumns) +
                                     ", rounds_won) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                     "?, ?, ?)"));
  ARTUNE_ASSIGN_OR_RETURN(
      Statement metric,
      db.Prepare(
          "INSERT INTO sweep_finalist_metrics (sweep_id, rank, name, value) VALUES (?, ?, ?, ?)"));
  int64_t rank = 0;
  for (const FinalistRecord& finalist : finalists) {
    ++rank;
    int column = 1;
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, sweep_id));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, rank));
    ARTUNE_RETURN_IF_ERROR(BindMeasurement(insert, column, finalist.pooled, now));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, static_cast<int64_t>(finalist.rounds_won)));
    ARTUNE_RETURN_IF_ERROR(insert.Run().WithContext("cannot store the sweep's finalist " +
                                                    TrialKnobKey(finalist.pooled.knobs)));
    ARTUNE_RETURN_IF_ERROR(insert.Reset());
    for (const auto& [name, value] : finalist.pooled.metrics) {
      ARTUNE_RETURN_IF_ERROR(metric.Bind(1, sweep_id));
      ARTUNE_RETURN_IF_ERROR(metric.Bind(2, rank));
      ARTUNE_RETURN_IF_ERROR(metric.Bind(3, name));
      ARTUNE_RETURN_IF_ERROR(metric.Bind(4, value));
      ARTUNE_RETURN_IF_ERROR(metric.Run());
      ARTUNE_RETURN_IF_ERROR(metric.Reset());
    }
  }
  return Status::Ok();
}

Result<std::vector<FinalistRecord>> LoadFinalists(Database& db, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement select,
      // ReadTrialRow's columns, then rank and rounds_won.
      db.Prepare("SELECT 0, sweep_id, " + std::string(kMeasurementColumns) +
                 ", rank, rounds_won FROM sweep_finalists WHERE sweep_id = ? ORDER BY rank"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(
      Statement metrics,
      db.Prepare("SELECT name, value FROM sweep_finalist_metrics WHERE sweep_id = ? AND rank = ?"));
  std::vector<FinalistRecord> finalists;
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) break;
    FinalistRecord finalist;
    ARTUNE_ASSIGN_OR_RETURN(finalist.pooled, sweeps::ReadTrialRow(select));
    const int64_t rank = select.ColumnInt64(13);
    finalist.rounds_won = static_cast<uint32_t>(select.ColumnInt64(14));
    ARTUNE_RETURN_IF_ERROR(metrics.Bind(1, sweep_id));
    ARTUNE_RETURN_IF_ERROR(metrics.Bind(2, rank));
    while (true) {
      ARTUNE_ASSIGN_OR_RETURN(bool has_metric, metrics.Step());
      if (!has_metric) break;
      finalist.pooled.metrics.emplace(metrics.ColumnText(0), metrics.ColumnDouble(1));
    }
    ARTUNE_RETURN_IF_ERROR(metrics.Reset());
    finalists.push_back(std::move(finalist));
  }
  return finalists;
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
                                     "decided_at, final_rounds) VALUES (?, ?, ?, ?, ?)"));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(1, sweep_id));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(2, VerdictName(verdict.verdict)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(3, verdict.best_knobs));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(4, verdict.decided_at.empty() ? now : verdict.decided_at));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(5, static_cast<int64_t>(verdict.final_rounds)));
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
  ARTUNE_RETURN_IF_ERROR(InsertFinalists(db, sweep_id, verdict.finalists, now));
  return transaction.Commit();
}

Result<std::optional<SweepVerdict>> LoadSweepVerdict(Database& db, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare("SELECT verdict, best_knobs, decided_at, final_rounds FROM sweep_verdicts "
                 "WHERE sweep_id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::optional<SweepVerdict>();
  SweepVerdict verdict;
  const std::string verdict_text = select.ColumnText(0);
  const std::optional<Verdict> parsed = ParseVerdict(verdict_text);
  // The schema's CHECK admits only the known words; anything else is damage.
  if (!parsed) {
    return Status::Corruption("sweep " + std::to_string(sweep_id) + " has unknown verdict \"" +
                              verdict_text + "\"");
  }
  verdict.verdict = *parsed;
  verdict.best_knobs = select.ColumnText(1);
  verdict.decided_at = select.ColumnText(2);
  verdict.final_rounds = static_cast<uint32_t>(select.ColumnInt64(3));
  ARTUNE_ASSIGN_OR_RETURN(verdict.default_remeasured, LoadRemeasured(db, kDefaultAgain, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(verdict.best_remeasured, LoadRemeasured(db, kBestAgain, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(verdict.finalists, LoadFinalists(db, sweep_id));
  return std::optional<SweepVerdict>(std::move(verdict));
}

}  // namespace artune::db::sweeps
