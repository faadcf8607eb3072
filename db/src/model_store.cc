#include "model_store.h"

#include <string_view>

#include "record_table.h"
#include "sweep_store.h"

namespace artune::db::models {
namespace {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

constexpr std::string_view kModelColumns = "id, created_at, host, peer, fabric, rounds, duration_s";
constexpr RecordTable kModelTable = {
    "link_models", kModelColumns,
    "created_at",  "link model",
    "link models", "`artune model list` lists them; `artune model measure` makes one"};
constexpr std::string_view kPointColumns =
    "protocol, polling, chunk_size, pipeline_depth, size, inflight, median_s, low_s, high_s, "
    "rounds, slices";
constexpr std::string_view kPredictionColumns =
    "id, created_at, model_id, workload, search_space, inflight, configs, best_knobs, best_s, "
    "default_knobs, default_s, summary";
constexpr RecordTable kPredictionTable = {"predictions", kPredictionColumns,
                                          "created_at",  "prediction",
                                          "predictions", "`artune predict list` lists them"};

LinkModelRecord ReadModelRow(const Statement& row) {
  LinkModelRecord model;
  model.id = row.ColumnInt64(0);
  model.created_at = row.ColumnText(1);
  model.host = row.ColumnText(2);
  model.peer = row.ColumnText(3);
  model.fabric = row.ColumnText(4);
  model.rounds = static_cast<uint32_t>(row.ColumnInt64(5));
  model.duration_s = row.ColumnDouble(6);
  return model;
}

Status LoadPoints(Database& db, LinkModelRecord& model) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare("SELECT " + std::string(kPointColumns) +
                 " FROM link_model_points WHERE model_id = ? ORDER BY protocol, polling, "
                 "chunk_size, pipeline_depth, size, inflight, slices"));
  ARTUNE_RETURN_IF_ERROR(select.Bind(1, model.id));
  while (true) {
    ARTUNE_ASSIGN_OR_RETURN(bool has_row, select.Step());
    if (!has_row) break;
    LinkModelPointRow point;
    point.protocol = select.ColumnText(0);
    point.polling = select.ColumnText(1);
    point.chunk_size = static_cast<uint64_t>(select.ColumnInt64(2));
    point.pipeline_depth = static_cast<uint32_t>(select.ColumnInt64(3));
    point.size = static_cast<uint64_t>(select.ColumnInt64(4));
    point.inflight = static_cast<uint32_t>(select.ColumnInt64(5));
    point.median_s = select.ColumnDouble(6);
    point.low_s = select.ColumnDouble(7);
    point.high_s = select.ColumnDouble(8);
    point.rounds = static_cast<uint32_t>(select.ColumnInt64(9));
    point.slices = static_cast<uint32_t>(select.ColumnInt64(10));
    model.points.push_back(std::move(point));
  }
  return Status::Ok();
}

Status CheckModel(const LinkModelRecord& model) {
  if (model.fabric.empty()) {
    return Status::InvalidArgument("link model has no fabric: every model records its link's");
  }
  if (model.points.empty()) {
    return Status::InvalidArgument("link model has no point: measure before storing");
  }
  if (model.rounds == 0) return Status::InvalidArgument("link model has zero rounds");
  for (const LinkModelPointRow& point : model.points) {
    if (point.inflight == 0 || point.rounds == 0 || point.slices == 0) {
      return Status::InvalidArgument("link model point " + point.protocol + " " +
                                     std::to_string(point.size) +
                                     " B has zero inflight, rounds or slices");
    }
    for (double value : {point.median_s, point.low_s, point.high_s}) {
      ARTUNE_RETURN_IF_ERROR(sweeps::CheckFinite(value, "time", "link model point"));
    }
  }
  return sweeps::CheckFinite(model.duration_s, "duration_s", "link model");
}

Status InsertPoints(Database& db, int64_t model_id, const std::vector<LinkModelPointRow>& points) {
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO link_model_points (model_id, " + std::string(kPointColumns) +
                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  for (const LinkModelPointRow& point : points) {
    ARTUNE_ASSIGN_OR_RETURN(int64_t chunk,
                            sweeps::CheckedCount(point.chunk_size, "chunk_size", "model point"));
    ARTUNE_ASSIGN_OR_RETURN(int64_t size, sweeps::CheckedCount(point.size, "size", "model point"));
    int column = 1;
    ARTUNE_RETURN_IF_ERROR(insert.BindEach(
        column, model_id, point.protocol, point.polling, chunk,
        static_cast<int64_t>(point.pipeline_depth), size, static_cast<int64_t>(point.inflight),
        point.median_s, point.low_s, point.high_s, static_cast<int64_t>(point.rounds),
        static_cast<int64_t>(point.slices)));
    Status inserted = insert.Run();
    if (!inserted.ok()) {
      return inserted.WithContext("cannot store link model point " + point.protocol + " " +
                                  point.polling + " " + std::to_string(point.size) +
                                  " B (a point repeated?)");
    }
    ARTUNE_RETURN_IF_ERROR(insert.Reset());
  }
  return Status::Ok();
}

PredictionRecord ReadPredictionRow(const Statement& row) {
  PredictionRecord prediction;
  prediction.id = row.ColumnInt64(0);
  prediction.created_at = row.ColumnText(1);
  prediction.model_id = row.ColumnInt64(2);
  prediction.workload = row.ColumnText(3);
  prediction.search_space = row.ColumnText(4);
  prediction.inflight = row.ColumnDouble(5);
  prediction.configs = static_cast<uint32_t>(row.ColumnInt64(6));
  prediction.best_knobs = row.ColumnText(7);
  prediction.best_s = row.ColumnDouble(8);
  prediction.default_knobs = row.ColumnText(9);
  prediction.default_s = row.ColumnDouble(10);
  prediction.summary = row.ColumnText(11);
  return prediction;
}

Status LoadConfig(Database& db, PredictionRecord& prediction) {
  return sweeps::LoadTextPairs(db,
                               "SELECT knob, value FROM prediction_config WHERE prediction_id = ?",
                               prediction.id, prediction.config);
}

Status CheckPrediction(const PredictionRecord& prediction) {
  if (prediction.workload.empty()) return Status::InvalidArgument("prediction has no workload");
  if (prediction.best_knobs.empty()) return Status::InvalidArgument("prediction has no best");
  if (prediction.configs == 0) return Status::InvalidArgument("prediction costed no config");
  for (double value : {prediction.inflight, prediction.best_s, prediction.default_s}) {
    ARTUNE_RETURN_IF_ERROR(sweeps::CheckFinite(value, "time", "prediction"));
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> InsertLinkModel(Database& db, const LinkModelRecord& model,
                                const std::string& now) {
  ARTUNE_RETURN_IF_ERROR(CheckModel(model));
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO link_models (created_at, host, peer, fabric, rounds, duration_s) "
                 "VALUES (?, ?, ?, ?, ?, ?)"));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(1, model.created_at.empty() ? now : model.created_at));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(2, model.host));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(3, model.peer));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(4, model.fabric));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(5, static_cast<int64_t>(model.rounds)));
  ARTUNE_RETURN_IF_ERROR(insert.Bind(6, model.duration_s));
  Status inserted = insert.Run();
  if (!inserted.ok()) return inserted.WithContext("cannot store link model");
  const int64_t id = db.LastInsertRowId();
  ARTUNE_RETURN_IF_ERROR(InsertPoints(db, id, model.points));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return id;
}

Result<std::vector<LinkModelRecord>> ListLinkModels(Database& db, int limit) {
  return ListNewestFirst(db, kModelTable, limit, ReadModelRow,
                         [&db](LinkModelRecord& model) { return LoadPoints(db, model); });
}

Result<LinkModelRecord> GetLinkModel(Database& db, int64_t id) {
  return GetRecord(db, kModelTable, id, ReadModelRow,
                   [&db](LinkModelRecord& found) { return LoadPoints(db, found); });
}

Result<int64_t> InsertPrediction(Database& db, const PredictionRecord& prediction,
                                 const std::string& now) {
  ARTUNE_RETURN_IF_ERROR(CheckPrediction(prediction));
  ARTUNE_ASSIGN_OR_RETURN(auto transaction, Transaction::Begin(db, Transaction::Kind::kImmediate));
  ARTUNE_ASSIGN_OR_RETURN(Statement model, db.Prepare("SELECT 1 FROM link_models WHERE id = ?"));
  ARTUNE_RETURN_IF_ERROR(model.Bind(1, prediction.model_id));
  ARTUNE_ASSIGN_OR_RETURN(bool model_exists, model.Step());
  if (!model_exists) return NoSuchRecord(db, kModelTable, prediction.model_id);
  ARTUNE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO predictions (" + std::string(kPredictionColumns.substr(4)) +
                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int column = 1;
  ARTUNE_RETURN_IF_ERROR(insert.BindEach(
      column, prediction.created_at.empty() ? now : prediction.created_at, prediction.model_id,
      prediction.workload, prediction.search_space, prediction.inflight,
      static_cast<int64_t>(prediction.configs), prediction.best_knobs, prediction.best_s,
      prediction.default_knobs, prediction.default_s, prediction.summary));
  Status inserted = insert.Run();
  if (!inserted.ok()) return inserted.WithContext("cannot store prediction");
  const int64_t id = db.LastInsertRowId();
  ARTUNE_RETURN_IF_ERROR(sweeps::InsertTextPairs(db, "prediction_config", "prediction_id", "knob",
                                                 id, prediction.config));
  ARTUNE_RETURN_IF_ERROR(transaction.Commit());
  return id;
}

Result<std::vector<PredictionRecord>> ListPredictions(Database& db, int limit) {
  return ListNewestFirst(db, kPredictionTable, limit, ReadPredictionRow,
                         [&db](PredictionRecord& found) { return LoadConfig(db, found); });
}

Result<PredictionRecord> GetPrediction(Database& db, int64_t id) {
  return GetRecord(db, kPredictionTable, id, ReadPredictionRow,
                   [&db](PredictionRecord& found) { return LoadConfig(db, found); });
}

}  // namespace artune::db::models
