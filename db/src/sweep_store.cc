#include "sweep_store.h"

#include <cmath>
#include <limits>
#include <string_view>

#include "record_table.h"
#include "sweep_verdict_store.h"

namespace artune::db {

std::string TrialKnobKey(const std::map<std::string, std::string>& knobs) {
  std::string key;
  for (const auto& [name, value] : knobs) {
    if (!key.empty()) key += ';';
    key += name;
    key += '=';
    key += value;
  }
  return key;
}

Result<std::map<std::string, std::string>> ParseTrialKnobKey(std::string_view key) {
  std::map<std::string, std::string> knobs;
  if (key.empty()) return Status::InvalidArgument("trial knob key is empty");
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find(';', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view pair = key.substr(start, end - start);
    size_t equals = pair.find('=');
    if (equals == std::string_view::npos || equals == 0 ||
        pair.find('=', equals + 1) != std::string_view::npos) {
      return Status::InvalidArgument("trial knob key \"" + std::string(key) + "\" has a pair \"" +
                                     std::string(pair) + "\" that is not name=value");
    }
    auto [it, inserted] =
        knobs.emplace(std::string(pair.substr(0, equals)), std::string(pair.substr(equals + 1)));
    if (!inserted) {
      return Status::InvalidArgument("trial knob key \"" + std::string(key) + "\" names " +
                                     it->first + " twice");
    }
    start = end + 1;
  }
  if (TrialKnobKey(knobs) != key) {
    return Status::InvalidArgument("trial knob key \"" + std::string(key) +
                                   "\" is not in canonical (name) order");
  }
  return knobs;
}

namespace sweeps {
namespace {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

// What InsertSweep writes: the columns of schema v3. background_load (v8) is set
// by an UPDATE when it is not 0 (the column's default), so a file at an older
// schema (the migration tests build them) still takes a sweep without it.
constexpr std::string_view kSweepInsertColumns =
    "created_at, finished_at, host, peer, fabric, objective, goal, strategy, workload, "
    "search_space, default_knobs";
constexpr std::string_view kSweepColumns =
    "id, created_at, finished_at, host, peer, fabric, objective, goal, strategy, workload, "
    "search_space, default_knobs, background_load";
constexpr RecordTable kSweepTable = {
    "sweeps", kSweepColumns, "created_at",
    "sweep",  "sweeps",      "`artune results --sweeps` lists the stored sweeps"};

constexpr std::string_view kTrialColumns =
    "id, sweep_id, knobs, status, objective, ci_low, ci_high, samples, remeasured, validated, "
    "error, started_at, duration_s";

}  // namespace

Result<int64_t> CheckedCount(uint64_t value, std::string_view field, std::string_view record) {
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument(std::string(record) + " " + std::string(field) + " " +
                                   std::to_string(value) + " is past the store's limit of " +
                                   std::to_string(std::numeric_limits<int64_t>::max()));
  }
  return static_cast<int64_t>(value);
}

Status CheckFinite(double value, std::string_view field, std::string_view record) {
  if (!std::isfinite(value)) {
    return Status::InvalidArgument(std::string(record) + " " + std::string(field) + " is " +
                                   std::to_string(value) +
                                   ": store a finite number (0 for a failed measurement)");
  }
  return Status::Ok();
}

Status InsertTextPairs(Database& db, std::string_view table, std::string_view id_column,
                       std::string_view key_column, int64_t id,
                       const std::map<std::string, std::string>& pairs) {
  if (pairs.empty()) return Status::Ok();
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO " + std::string(table) + " (" + std::string(id_column) + ", " +
                 std::string(key_column) + ", value) VALUES (?, ?, ?)"));
  for (const auto& [key, value] : pairs) {
    if (key.empty()) {
      return Status::InvalidArgument("empty " + std::string(key_column) + " in " +
                                     std::string(table) + " (value \"" + value +
                                     "\"): every entry needs a name");
    }
    ARTUNE_RETURN_IF_ERROR(insert.Bind(1, id));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(2, key));
    ARTUNE_RETURN_IF_ERROR(insert.Bind(3, value));
    ARTUNE_RETURN_IF_ERROR(insert.Run());
    ARTUNE_RETURN_IF_ERROR(insert.Reset());
  }
  return Status::Ok();
}

Status LoadTextPairs(Database& db, std::string_view sql, int64_t id,
                     std::map<std::string, std::string>& out) {
  ARTUNE_ASSIGN_OR_RETURN(Statement select, db.Prepare(sql));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, id));
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) return Status::Ok();
    out.emplace(select.ColumnText(0), select.ColumnText(1));
  }
}

namespace {

SweepRecord ReadSweepRow(const Statement& row) {
  SweepRecord sweep;
  sweep.id = row.ColumnInt64(0);
  sweep.created_at = row.ColumnText(1);
  sweep.finished_at = row.ColumnText(2);
  sweep.host = row.ColumnText(3);
  sweep.peer = row.ColumnText(4);
  sweep.fabric = row.ColumnText(5);
  sweep.objective = row.ColumnText(6);
  sweep.goal = row.ColumnText(7);
  sweep.strategy = row.ColumnText(8);
  sweep.workload = row.ColumnText(9);
  sweep.search_space = row.ColumnText(10);
  sweep.default_knobs = row.ColumnText(11);
  sweep.background_load = static_cast<uint32_t>(row.ColumnInt64(12));
  return sweep;
}

Status LoadSweepPairs(Database& db, SweepRecord& sweep) {
  ARTUNE_RETURN_IF_ERROR(
      LoadTextPairs(db, "SELECT knob, value FROM sweep_base_config WHERE sweep_id = ?", sweep.id,
                    sweep.base_config));
  ARTUNE_RETURN_IF_ERROR(
      LoadTextPairs(db, "SELECT name, value FROM sweep_parameters WHERE sweep_id = ?", sweep.id,
                    sweep.parameters));
  ARTUNE_ASSIGN_OR_RETURN(sweep.verdict, LoadSweepVerdict(db, sweep.id));
  return Status::Ok();
}

Status LoadTrialDetails(Database& db, TrialRecord& trial) {
  ARTUNE_RETURN_IF_ERROR(LoadTextPairs(
      db, "SELECT knob, value FROM trial_config WHERE trial_id = ?", trial.id, trial.config));
  ARTUNE_ASSIGN_OR_RETURN(Statement select,
                          db.Prepare("SELECT name, value FROM trial_metrics WHERE trial_id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, trial.id));
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) return Status::Ok();
    trial.metrics.emplace(select.ColumnText(0), select.ColumnDouble(1));
  }
}

}  // namespace

Result<TrialRecord> ReadTrialRow(const Statement& row) {
  TrialRecord trial;
  trial.id = row.ColumnInt64(0);
  trial.sweep_id = row.ColumnInt64(1);
  ARTUNE_ASSIGN_OR_RETURN(trial.knobs, ParseTrialKnobKey(row.ColumnText(2)));
  const std::string status = row.ColumnText(3);
  const std::optional<TrialStatus> parsed = ParseTrialStatus(status);
  // The schema's CHECK admits only the known words; anything else is damage.
  if (!parsed)
    return Status::Corruption("a stored measurement has unknown status \"" + status + "\"");
  trial.status = *parsed;
  trial.objective = row.ColumnDouble(4);
  trial.ci_low = row.ColumnDouble(5);
  trial.ci_high = row.ColumnDouble(6);
  trial.samples = static_cast<uint64_t>(row.ColumnInt64(7));
  trial.remeasured = static_cast<uint64_t>(row.ColumnInt64(8));
  trial.validated = row.ColumnBool(9);
  trial.error = row.ColumnText(10);
  trial.started_at = row.ColumnText(11);
  trial.duration_s = row.ColumnDouble(12);
  return trial;
}

Result<std::string> SweepGoal(Database& db, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(Statement select, db.Prepare("SELECT goal FROM sweeps WHERE id = ?"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) {
    return Status::NotFound("no sweep with id " + std::to_string(sweep_id) + " in " + db.path() +
                            " (`artune results --sweeps` lists the stored sweeps)");
  }
  return select.ColumnText(0);
}

Status CheckKnobs(const std::map<std::string, std::string>& knobs) {
  if (knobs.empty()) {
    return Status::InvalidArgument(
        "trial has no knob values: a trial is a point of the search "
        "space, name at least one knob");
  }
  for (const auto& [name, value] : knobs) {
    if (name.empty() || name.find_first_of("=;") != std::string::npos ||
        value.find_first_of("=;") != std::string::npos) {
      return Status::InvalidArgument("trial knob \"" + name + "\" = \"" + value +
                                     "\" is empty or contains '=' or ';', which the knob key "
                                     "uses as separators");
    }
  }
  return Status::Ok();
}

Result<int64_t> InsertSweep(Database& db, const SweepRecord& sweep, const std::string& now) {
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"fabric", &sweep.fabric},
        {"objective", &sweep.objective},
        {"strategy", &sweep.strategy},
        {"workload", &sweep.workload}}) {
    if (value->empty()) {
      return Status::InvalidArgument(std::string("sweep has an empty ") + field +
                                     ": every sweep records its " + field);
    }
  }
  if (sweep.goal != "min" && sweep.goal != "max") {
    return Status::InvalidArgument("sweep goal \"" + sweep.goal +
                                   "\" is neither \"min\" nor \"max\"");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_ASSIGN_OR_RETURN(Statement insert,
                          db.Prepare("INSERT INTO sweeps (" + std::string(kSweepInsertColumns) +
                                     ") VALUES (?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, sweep.created_at.empty() ? now : sweep.created_at));
  for (const std::string* text :
       {&sweep.host, &sweep.peer, &sweep.fabric, &sweep.objective, &sweep.goal, &sweep.strategy,
        &sweep.workload, &sweep.search_space, &sweep.default_knobs}) {
    ARTUNE_RETURN_IF_ERROR(insert.Bind(column++, *text));
  }
  Status inserted = insert.Run();
  if (!inserted.ok()) return inserted.WithContext("cannot store sweep");
  const int64_t id = db.LastInsertRowId();
  if (sweep.background_load > 0) {
    ARTUNE_ASSIGN_OR_RETURN(Statement load,
                            db.Prepare("UPDATE sweeps SET background_load = ? WHERE id = ?"));
    ARTUNE_RETURN_IF_ERROR(load.Bind(1, static_cast<int64_t>(sweep.background_load)));
    ARTUNE_RETURN_IF_ERROR(load.Bind(2, id));
    ARTUNE_RETURN_IF_ERROR(load.Run());
  }
  ARTUNE_RETURN_IF_ERROR(
      InsertTextPairs(db, "sweep_base_config", "sweep_id", "knob", id, sweep.base_config));
  ARTUNE_RETURN_IF_ERROR(
      InsertTextPairs(db, "sweep_parameters", "sweep_id", "name", id, sweep.parameters));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return id;
}

Status FinishSweep(Database& db, int64_t sweep_id, const std::string& now) {
  return MarkFinished(db, kSweepTable, sweep_id, now,
                      [&] { return SweepGoal(db, sweep_id).status(); });
}

Result<std::vector<SweepRecord>> ListSweeps(Database& db, int limit) {
  return ListNewestFirst(db, kSweepTable, limit, ReadSweepRow,
                         [&db](SweepRecord& sweep) { return LoadSweepPairs(db, sweep); });
}

Result<SweepRecord> GetSweep(Database& db, int64_t id) {
  return GetRecord(db, kSweepTable, id, ReadSweepRow,
                   [&db](SweepRecord& found) { return LoadSweepPairs(db, found); });
}

Result<int64_t> InsertTrial(Database& db, const TrialRecord& trial, const std::string& now) {
  ARTUNE_RETURN_IF_ERROR(CheckKnobs(trial.knobs));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(trial.objective, "objective", "trial"));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(trial.ci_low, "ci_low", "trial"));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(trial.ci_high, "ci_high", "trial"));
  ARTUNE_RETURN_IF_ERROR(CheckFinite(trial.duration_s, "duration_s", "trial"));
  for (const auto& [name, value] : trial.metrics) {
    if (name.empty()) return Status::InvalidArgument("trial has a metric with an empty name");
    ARTUNE_RETURN_IF_ERROR(CheckFinite(value, "metric " + name, "trial"));
  }
  ARTUNE_ASSIGN_OR_RETURN(int64_t samples, CheckedCount(trial.samples, "samples", "trial"));
  ARTUNE_ASSIGN_OR_RETURN(int64_t remeasured,
                          CheckedCount(trial.remeasured, "remeasured", "trial"));
  const std::string key = TrialKnobKey(trial.knobs);

  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_RETURN_IF_ERROR(SweepGoal(db, trial.sweep_id).status());
  ARTUNE_ASSIGN_OR_RETURN(Statement insert,
                          db.Prepare("INSERT INTO trials (" + std::string(kTrialColumns.substr(4)) +
                                     ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.BindEach(
      column, trial.sweep_id, key, TrialStatusName(trial.status), trial.objective, trial.ci_low,
      trial.ci_high, samples, remeasured, trial.validated, trial.error,
      trial.started_at.empty() ? now : trial.started_at, trial.duration_s));
  Status inserted = insert.Run();
  if (!inserted.ok()) {
    if (inserted.message().find("UNIQUE") != std::string::npos) {
      return Status::AlreadyExists("sweep " + std::to_string(trial.sweep_id) +
                                   " already has a trial with knobs " + key +
                                   ": a resumed sweep skips the points it has");
    }
    return inserted.WithContext("cannot store trial " + key);
  }
  const int64_t id = db.LastInsertRowId();
  ARTUNE_RETURN_IF_ERROR(InsertTextPairs(db, "trial_config", "trial_id", "knob", id, trial.config));
  if (!trial.metrics.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(
        Statement metric,
        db.Prepare("INSERT INTO trial_metrics (trial_id, name, value) VALUES (?, ?, ?)"));
    for (const auto& [name, value] : trial.metrics) {
      ARTUNE_RETURN_IF_ERROR(metric.Bind(1, id));
      ARTUNE_RETURN_IF_ERROR(metric.Bind(2, name));
      ARTUNE_RETURN_IF_ERROR(metric.Bind(3, value));
      ARTUNE_RETURN_IF_ERROR(metric.Run());
      ARTUNE_RETURN_IF_ERROR(metric.Reset());
    }
  }
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return id;
}

Result<std::vector<TrialRecord>> ListTrials(Database& db, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kDeferred));
  ARTUNE_RETURN_IF_ERROR(SweepGoal(db, sweep_id).status());
  ARTUNE_ASSIGN_OR_RETURN(Statement select,
                          db.Prepare("SELECT " + std::string(kTrialColumns) +
                                     " FROM trials WHERE sweep_id = ? ORDER BY id"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  std::vector<TrialRecord> trials;
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) break;
    ARTUNE_ASSIGN_OR_RETURN(TrialRecord trial, ReadTrialRow(select));
    trials.push_back(std::move(trial));
  }
  for (TrialRecord& trial : trials) ARTUNE_RETURN_IF_ERROR(LoadTrialDetails(db, trial));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return trials;
}

Result<std::optional<TrialRecord>> BestTrial(Database& db, int64_t sweep_id) {
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kDeferred));
  ARTUNE_ASSIGN_OR_RETURN(std::string goal, SweepGoal(db, sweep_id));
  // The direction is one of two fixed strings, never user text.
  const std::string order = goal == "max" ? "DESC" : "ASC";
  ARTUNE_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare("SELECT " + std::string(kTrialColumns) +
                 " FROM trials WHERE sweep_id = ? AND status = 'ok' AND validated = 1 ORDER BY "
                 "objective " +
                 order + ", id LIMIT 1"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, sweep_id));
  ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
  std::optional<TrialRecord> best;
  if (has_row) {
    ARTUNE_ASSIGN_OR_RETURN(TrialRecord trial, ReadTrialRow(select));
    ARTUNE_RETURN_IF_ERROR(LoadTrialDetails(db, trial));
    best = std::move(trial);
  }
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return best;
}

}  // namespace sweeps
}  // namespace artune::db
