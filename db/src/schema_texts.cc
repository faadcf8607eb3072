// The schema text of every migration (see schema_texts.h).
#include "schema_texts.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace artune::db {
namespace {

// The schema is written as column lists, one per table, and turned into CREATE
// TABLE text here, so that tables of the same shape (a measurement, a key/value list
// beside its owner) are declared once. The text must stay byte for byte what each
// migration has always run: SQLite keeps it in sqlite_schema, and files in the
// field were built by it. migrations_test's golden digest catches any drift.

// One column of a CREATE TABLE.
struct Column {
  std::string_view name;
  std::string_view type;          // INTEGER | TEXT | REAL
  std::string_view constraints;   // "NOT NULL CHECK (...)"; may run over several lines
  std::string_view comment = "";  // SQL comment at the end of the line; "" for none
};

struct Table {
  std::string_view name;
  std::vector<Column> columns;
  std::vector<std::string_view> constraints = {};  // "PRIMARY KEY (...)", "UNIQUE (...)"
  bool without_rowid = false;
  // Where the type starts; 0 for one space after the longest column name.
  size_t name_width = 0;
};

std::string Padded(std::string_view text, size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string CreateTable(const Table& table) {
  size_t name_width = table.name_width;
  for (const Column& column : table.columns) {
    name_width = std::max(name_width, column.name.size() + 1);
  }
  constexpr size_t kTypeWidth = std::string_view("INTEGER ").size();
  // Each column's line up to its comma; a separator stands in for the last line's
  // missing comma so that its comment lines up with the others.
  std::vector<std::string> lines;
  size_t check_comment_at = 0;  // comments after a CHECK line up with each other
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const Column& column = table.columns[i];
    const bool last = i + 1 == table.columns.size() && table.constraints.empty();
    std::string line = "  " + Padded(column.name, name_width) + Padded(column.type, kTypeWidth) +
                       std::string(column.constraints);
    if (!last || !column.comment.empty()) line += last ? " " : ",";
    if (!column.comment.empty() && column.constraints.find("CHECK") != std::string_view::npos) {
      check_comment_at = std::max(check_comment_at, line.size());
    }
    lines.push_back(std::move(line));
  }
  std::string out = "CREATE TABLE " + std::string(table.name) + " (\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const Column& column = table.columns[i];
    out += lines[i];
    if (!column.comment.empty()) {
      if (column.constraints.find("CHECK") != std::string_view::npos) {
        out.append(check_comment_at - lines[i].size(), ' ');
      }
      out += "  -- " + std::string(column.comment);
    }
    out += "\n";
  }
  for (size_t i = 0; i < table.constraints.size(); ++i) {
    out += "  " + std::string(table.constraints[i]) +
           (i + 1 < table.constraints.size() ? ",\n" : "\n");
  }
  out += table.without_rowid ? ") WITHOUT ROWID;\n" : ");\n";
  return out;
}

std::vector<Column> Concat(std::initializer_list<std::vector<Column>> groups) {
  std::vector<Column> out;
  for (const std::vector<Column>& group : groups) out.insert(out.end(), group.begin(), group.end());
  return out;
}

// "a, b, c": the names of `columns`, for the INSERT ... SELECT that copies a table.
std::string ColumnNames(const std::vector<Column>& columns) {
  std::string out;
  for (const Column& column : columns) {
    if (!out.empty()) out += ", ";
    out += column.name;
  }
  return out;
}

// A key/value list belonging to one row of `owner` (config, parameters, metrics):
// rows rather than columns, so a new knob or metric needs no migration.
std::string KeyValueTable(std::string_view table, std::string_view owner_column,
                          std::string_view owner, std::string_view key, std::string_view type) {
  const std::string references = "NOT NULL REFERENCES " + std::string(owner) + " ON DELETE CASCADE";
  const std::string key_check = "NOT NULL CHECK (" + std::string(key) + " <> '')";
  const std::string primary_key =
      "PRIMARY KEY (" + std::string(owner_column) + ", " + std::string(key) + ")";
  return CreateTable({table,
                      {{owner_column, "INTEGER", references},
                       {key, "TEXT", key_check},
                       {"value", type, "NOT NULL"}},
                      {primary_key},
                      /*without_rowid=*/true});
}

// How a measurement came out (a trial, a re-measurement, a finalist's pooled rounds).
std::vector<Column> MeasurementColumns() {
  return {
      {"status", "TEXT", "NOT NULL CHECK (status IN ('ok', 'invalid', 'failed'))"},
      {"objective", "REAL", "NOT NULL"},
      {"ci_low", "REAL", "NOT NULL"},
      {"ci_high", "REAL", "NOT NULL"},
      {"samples", "INTEGER", "NOT NULL CHECK (samples >= 0)"},
      {"remeasured", "INTEGER", "NOT NULL CHECK (remeasured >= 0)"},
      {"validated", "INTEGER", "NOT NULL CHECK (validated IN (0, 1))"},
  };
}

// The end of a measurement taken again after the search (schema v4 on), which is
// not a trial: when, rather than started_at.
std::vector<Column> RemeasuredTail() {
  return {
      {"error", "TEXT", "NOT NULL"},
      {"measured_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
      {"duration_s", "REAL", "NOT NULL"},
  };
}

// Schema v1: bench runs. Config and parameters are key/value tables rather than
// columns so a new knob in the transport's table needs no migration here.
std::string SchemaV1() {
  const Table bench_runs = {
      "bench_runs",
      {
          {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
          {"started_at", "TEXT", "NOT NULL", "ISO 8601 UTC, e.g. 2024-05-01T12:34:56.789Z"},
          {"host", "TEXT", "NOT NULL"},
          {"peer", "TEXT", "NOT NULL", "address, or 'loopback'"},
          {"transport", "TEXT", "NOT NULL CHECK (transport <> '')"},
          {"benchmark", "TEXT", "NOT NULL CHECK (benchmark <> '')"},
          {"scheme", "TEXT", "NOT NULL"},
          {"fabric", "TEXT", "NOT NULL", "'' for stock gRPC"},
          {"payload_bytes", "INTEGER", "NOT NULL CHECK (payload_bytes >= 0)"},
          {"duration_s", "REAL", "NOT NULL"},
          {"rpcs", "INTEGER", "NOT NULL CHECK (rpcs >= 0)"},
          {"latency_p50_us", "REAL", "NOT NULL"},
          {"latency_p99_us", "REAL", "NOT NULL"},
          {"latency_mean_us", "REAL", "NOT NULL"},
          {"latency_stddev_us", "REAL", "NOT NULL"},
          {"bandwidth_mbps", "REAL", "NOT NULL"},
          {"rpcs_per_s", "REAL", "NOT NULL"},
          {"validated", "INTEGER", "NOT NULL CHECK (validated IN (0, 1))"},
      }};
  return "\n" + CreateTable(bench_runs) +
         "CREATE INDEX bench_runs_by_time ON bench_runs (started_at);\n\n" +
         KeyValueTable("bench_run_config", "run_id", "bench_runs (id)", "knob", "TEXT") + "\n" +
         KeyValueTable("bench_run_parameters", "run_id", "bench_runs (id)", "name", "TEXT");
}

// Schema v2: captures from `artune probe`. The whole profile is kept as its JSON
// (the probes' own format, so histograms need no schema here); the per-method
// totals are also rows so SQL can filter and sum them without parsing JSON.
std::string SchemaV2() {
  const Table captures = {
      "captures",
      {
          {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
          {"started_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
          {"backend", "TEXT", "NOT NULL CHECK (backend <> '')", "'pcap' | 'ebpf' | ..."},
          {"process", "TEXT", "NOT NULL", "process name or pid, '' when not known"},
          {"duration_s", "REAL", "NOT NULL"},
          {"lost_events", "INTEGER", "NOT NULL CHECK (lost_events >= 0)"},
          {"profile_json", "TEXT", "NOT NULL"},
      }};
  const Table capture_methods = {
      "capture_methods",
      {
          {"capture_id", "INTEGER", "NOT NULL REFERENCES captures (id) ON DELETE CASCADE"},
          {"method", "TEXT", "NOT NULL CHECK (method <> '')"},
          {"direction", "TEXT", "NOT NULL", "'request' | 'response'"},
          {"messages", "INTEGER", "NOT NULL CHECK (messages >= 0)"},
          {"bytes", "INTEGER", "NOT NULL CHECK (bytes >= 0)"},
          {"scheme", "TEXT", "NOT NULL", "the size scheme the probes classified"},
          {"small", "INTEGER", "NOT NULL CHECK (small >= 0)"},
          {"medium", "INTEGER", "NOT NULL CHECK (medium >= 0)"},
          {"large", "INTEGER", "NOT NULL CHECK (large >= 0)"},
      },
      {"PRIMARY KEY (capture_id, method, direction)"},
      /*without_rowid=*/true};
  return "\n" + CreateTable(captures) +
         "CREATE INDEX captures_by_time ON captures (started_at);\n\n" +
         CreateTable(capture_methods);
}

// Schema v3: sweeps (`artune sweep`) and their trials. A trial is one point of the
// search space, identified within its sweep by `knobs`, the canonical text of its
// knob values (TrialKnobKey in store.h); UNIQUE (sweep_id, knobs) is what lets
// `artune sweep --resume` skip the points a killed run had already committed.
// Base config, parameters, full trial configs and metrics are key/value rows so a
// new knob or metric needs no migration.
std::string SchemaV3() {
  const Table sweeps = {
      "sweeps",
      {
          {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
          {"created_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
          {"finished_at", "TEXT", "NOT NULL", "ISO 8601 UTC, '' while running (or killed)"},
          {"host", "TEXT", "NOT NULL"},
          {"peer", "TEXT", "NOT NULL", "address, or 'loopback'"},
          {"fabric", "TEXT", "NOT NULL CHECK (fabric <> '')"},
          {"objective", "TEXT", "NOT NULL CHECK (objective <> '')", "'latency-p50', ..."},
          {"goal", "TEXT", "NOT NULL CHECK (goal IN ('min', 'max'))"},
          {"strategy", "TEXT", "NOT NULL CHECK (strategy <> '')", "'grid' | 'adaptive'"},
          {"workload", "TEXT", "NOT NULL CHECK (workload <> '')", "'scheme:skew' | 'capture:12'"},
          {"search_space", "TEXT", "NOT NULL", "canonical --knob specs, ' ' separated"},
          {"default_knobs", "TEXT", "NOT NULL", "the knob key of the transport's defaults"},
      }};
  const Table trials = {
      "trials",
      Concat({{{"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
               {"sweep_id", "INTEGER", "NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE"},
               {"knobs", "TEXT", "NOT NULL CHECK (knobs <> '')",
                "'chunk_size=64KiB;eager_threshold=4KiB'"}},
              MeasurementColumns(),
              {{"error", "TEXT", "NOT NULL", "'' unless status is 'failed' or 'invalid'"},
               {"started_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
               {"duration_s", "REAL", "NOT NULL"}}}),
      {"UNIQUE (sweep_id, knobs)"},
      /*without_rowid=*/false,
      /*name_width=*/12};
  return "\n" + CreateTable(sweeps) + "CREATE INDEX sweeps_by_time ON sweeps (created_at);\n\n" +
         KeyValueTable("sweep_base_config", "sweep_id", "sweeps (id)", "knob", "TEXT") + "\n" +
         KeyValueTable("sweep_parameters", "sweep_id", "sweeps (id)", "name", "TEXT") + "\n" +
         CreateTable(trials) + "\n" +
         KeyValueTable("trial_config", "trial_id", "trials (id)", "knob", "TEXT") + "\n" +
         KeyValueTable("trial_metrics", "trial_id", "trials (id)", "name", "REAL");
}

// A measurement taken again at the end of a sweep, one per sweep (v4: the default;
// v5: the best), with its metrics in a table beside it.
std::string RemeasuredTables(std::string_view table, std::string_view knobs_comment) {
  const Table remeasured = {
      table, Concat({{{"sweep_id", "INTEGER",
                       "PRIMARY KEY REFERENCES sweep_verdicts (sweep_id) ON DELETE CASCADE"},
                      {"knobs", "TEXT", "NOT NULL CHECK (knobs <> '')", knobs_comment}},
                     MeasurementColumns(),
                     RemeasuredTail()})};
  return CreateTable(remeasured) + "\n" +
         KeyValueTable(std::string(table) + "_metrics", "sweep_id",
                       std::string(table) + " (sweep_id)", "name", "REAL");
}

// Schema v4: a sweep's verdict on its best config against the transport's defaults,
// and the default measured again at the end of the sweep that the verdict rests on.
// One row per sweep in each (a resumed sweep replaces them: delete the verdict, the
// cascade takes the rest). The re-measurement is not a trial: trials are the
// search's points, UNIQUE per knob key, and the default's first measurement is
// already one of them. Its config is the sweep's base config and is not repeated.
std::string SchemaV4() {
  const Table sweep_verdicts = {
      "sweep_verdicts",
      {
          {"sweep_id", "INTEGER", "PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE"},
          {"verdict", "TEXT",
           "NOT NULL\n"
           "             CHECK (verdict IN ('beats_default', 'within_noise', 'default_is_best',\n"
           "                                'no_valid_trial'))"},
          {"best_knobs", "TEXT", "NOT NULL",
           "knob key of the best trial judged; '' for no_valid_trial"},
          {"decided_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
      }};
  return "\n" + CreateTable(sweep_verdicts) + "\n" +
         RemeasuredTables("sweep_default_remeasured", "the sweep's default_knobs");
}

// Schema v5: the best trial's config re-measured back to back with the default at the
// end of a sweep (SweepVerdict::best_remeasured), the same shape as the default's.
std::string SchemaV5() {
  return "\n" + RemeasuredTables("sweep_best_remeasured", "the best trial's knob key");
}

// Schema v6: the final round of a sweep. The number of interleaved rounds goes on
// the verdict; each finalist's pooled measurement (the shape of the re-measured
// tables, plus its rank and the rounds it won against the default) in a table of
// its own, with its metrics. The cascade from the verdict removes them together.
std::string SchemaV6() {
  const Table sweep_finalists = {
      "sweep_finalists",
      Concat({{{"sweep_id", "INTEGER",
                "NOT NULL REFERENCES sweep_verdicts (sweep_id) ON DELETE CASCADE"},
               {"rank", "INTEGER", "NOT NULL CHECK (rank >= 1)", "1: the winner"},
               {"knobs", "TEXT", "NOT NULL CHECK (knobs <> '')"}},
              MeasurementColumns(),
              RemeasuredTail(),
              {{"rounds_won", "INTEGER", "NOT NULL CHECK (rounds_won >= 0)"}}}),
      {"PRIMARY KEY (sweep_id, rank)", "UNIQUE (sweep_id, knobs)"}};
  const Table sweep_finalist_metrics = {
      "sweep_finalist_metrics",
      {
          {"sweep_id", "INTEGER", "NOT NULL"},
          {"rank", "INTEGER", "NOT NULL"},
          {"name", "TEXT", "NOT NULL CHECK (name <> '')"},
          {"value", "REAL", "NOT NULL"},
      },
      {"PRIMARY KEY (sweep_id, rank, name)",
       "FOREIGN KEY (sweep_id, rank) REFERENCES sweep_finalists (sweep_id, rank) ON DELETE "
       "CASCADE"},
      /*without_rowid=*/true};
  return "\n"
         "ALTER TABLE sweep_verdicts ADD COLUMN final_rounds INTEGER NOT NULL DEFAULT 0\n"
         "  CHECK (final_rounds >= 0);\n\n" +
         CreateTable(sweep_finalists) + "\n" + CreateTable(sweep_finalist_metrics);
}

// The columns of `clusters`: v7's, and v12's whose measurement check admits 'model'.
std::vector<Column> ClusterColumns(std::string_view measurement_constraints) {
  return {
      {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
      {"created_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
      {"finished_at", "TEXT", "NOT NULL", "ISO 8601 UTC, '' while running (or killed)"},
      {"ranks", "INTEGER", "NOT NULL CHECK (ranks >= 2)"},
      {"pairs", "TEXT", "NOT NULL CHECK (pairs <> '')", "'ring' | 'all' | 'random:K'"},
      {"measurement", "TEXT", measurement_constraints},
  };
}

// The columns of `cluster_links` as v7 made them; `parent_reference` names the
// clusters table (v12 builds the table anew beside the old one).
std::vector<Column> ClusterLinkColumns(std::string_view parent_reference) {
  return {
      {"cluster_id", "INTEGER", parent_reference},
      {"round", "INTEGER", "NOT NULL CHECK (round >= 0)"},
      {"pair", "INTEGER", "NOT NULL CHECK (pair >= 0)"},
      {"client_rank", "INTEGER", "NOT NULL CHECK (client_rank >= 0)"},
      {"server_rank", "INTEGER", "NOT NULL CHECK (server_rank >= 0)"},
      {"client_host", "TEXT", "NOT NULL"},
      {"client_device", "TEXT", "NOT NULL", "'rxe0' (verbs) | 'tcp:eth0'"},
      {"server_host", "TEXT", "NOT NULL"},
      {"server_device", "TEXT", "NOT NULL"},
      {"status", "TEXT", "NOT NULL CHECK (status IN ('ok', 'failed'))"},
      {"error", "TEXT", "NOT NULL", "'' unless status is 'failed'"},
      {"sweep_id", "INTEGER", "REFERENCES sweeps (id)", "NULL: no sweep"},
      {"finished_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
  };
}

Table ClusterLinks(std::string_view name, std::vector<Column> columns) {
  return {
      name,
      std::move(columns),
      {"PRIMARY KEY (cluster_id, client_rank, server_rank)", "UNIQUE (cluster_id, round, pair)"},
      /*without_rowid=*/true};
}

// The columns of `link_model_points` as v9 made them (v10 adds `slices`).
std::vector<Column> LinkModelPointColumns() {
  return {
      {"model_id", "INTEGER", "NOT NULL REFERENCES link_models (id) ON DELETE CASCADE"},
      {"protocol", "TEXT", "NOT NULL CHECK (protocol <> '')", "transport::ProtocolName"},
      {"polling", "TEXT", "NOT NULL CHECK (polling IN ('busy', 'event', 'adaptive'))"},
      {"chunk_size", "INTEGER", "NOT NULL CHECK (chunk_size >= 0)", "chunked only; else 0"},
      {"pipeline_depth", "INTEGER", "NOT NULL CHECK (pipeline_depth >= 0)"},
      {"size", "INTEGER", "NOT NULL CHECK (size >= 0)", "bytes of the unit"},
      {"inflight", "INTEGER", "NOT NULL CHECK (inflight >= 1)"},
      {"median_s", "REAL", "NOT NULL", "per call, median over the rounds"},
      {"low_s", "REAL", "NOT NULL"},
      {"high_s", "REAL", "NOT NULL"},
      {"rounds", "INTEGER", "NOT NULL CHECK (rounds >= 1)"},
  };
}

// Schema v7: cluster runs (`artune sweep --mpi`) and their links. A link is one
// measured pair of ranks; its measurement is an ordinary sweep (sweep_id), so the
// sweep tables serve a link as they serve any sweep. UNIQUE per cluster by ranks
// and by schedule position is what lets `--resume` skip the links a killed run
// finished. A failed link may have no sweep (NULL: the peer never answered).
std::string SchemaV7() {
  const Table clusters = {"clusters",
                          ClusterColumns("NOT NULL CHECK (measurement IN ('sweep', 'ab'))")};
  const Table cluster_links = ClusterLinks(
      "cluster_links", ClusterLinkColumns("NOT NULL REFERENCES clusters (id) ON DELETE CASCADE"));
  return "\n" + CreateTable(clusters) +
         "CREATE INDEX clusters_by_time ON clusters (created_at);\n\n" +
         KeyValueTable("cluster_parameters", "cluster_id", "clusters (id)", "name", "TEXT") + "\n" +
         CreateTable(cluster_links) +
         "CREATE INDEX cluster_links_by_sweep ON cluster_links (sweep_id);\n";
}

// Schema v8: the background load a sweep was measured under (`--background-load`:
// CPU hogs running beside it). Sweeps stored before read back 0, none stated.
std::string SchemaV8() {
  return "\nALTER TABLE sweeps ADD COLUMN background_load INTEGER NOT NULL DEFAULT 0\n"
         "  CHECK (background_load >= 0);  -- CPU hogs beside the measurement; 0: none\n";
}

// Schema v9: link models (`artune model measure`: the time per call of each
// protocol's slices by size and calls in flight) and the predictions made from
// them (`artune predict`), each prediction with the full config of its best.
std::string SchemaV9() {
  const Table link_models = {"link_models",
                             {
                                 {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
                                 {"created_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
                                 {"host", "TEXT", "NOT NULL"},
                                 {"peer", "TEXT", "NOT NULL", "'loopback' or host:port"},
                                 {"fabric", "TEXT", "NOT NULL CHECK (fabric <> '')"},
                                 {"rounds", "INTEGER", "NOT NULL CHECK (rounds >= 1)"},
                                 {"duration_s", "REAL", "NOT NULL"},
                             }};
  const Table link_model_points = {
      "link_model_points",
      LinkModelPointColumns(),
      {"PRIMARY KEY (model_id, protocol, polling, chunk_size, pipeline_depth, size, inflight)"},
      /*without_rowid=*/true};
  const Table predictions = {
      "predictions",
      {
          {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
          {"created_at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
          {"model_id", "INTEGER", "NOT NULL REFERENCES link_models (id) ON DELETE CASCADE"},
          {"workload", "TEXT", "NOT NULL CHECK (workload <> '')", "'capture:12' | 'scheme:skew'"},
          {"search_space", "TEXT", "NOT NULL"},
          {"inflight", "REAL", "NOT NULL"},
          {"configs", "INTEGER", "NOT NULL CHECK (configs >= 1)", "configs costed"},
          {"best_knobs", "TEXT", "NOT NULL CHECK (best_knobs <> '')", "knob key"},
          {"best_s", "REAL", "NOT NULL", "predicted seconds of one pass"},
          {"default_knobs", "TEXT", "NOT NULL"},
          {"default_s", "REAL", "NOT NULL"},
          {"summary", "TEXT", "NOT NULL", "the terms that decided, one per line"},
      }};
  return "\n" + CreateTable(link_models) +
         "CREATE INDEX link_models_by_time ON link_models (created_at);\n\n" +
         CreateTable(link_model_points) + "\n" + CreateTable(predictions) +
         "CREATE INDEX predictions_by_time ON predictions (created_at);\n\n" +
         KeyValueTable("prediction_config", "prediction_id", "predictions (id)", "knob", "TEXT");
}

// Schema v11: artune watch's decisions.
std::string SchemaV11() {
  const Table watch_events = {
      "watch_events",
      {
          {"id", "INTEGER", "PRIMARY KEY AUTOINCREMENT"},
          {"at", "TEXT", "NOT NULL", "ISO 8601 UTC"},
          {"servers", "TEXT", "NOT NULL CHECK (servers <> '')",
           "control addresses, comma-separated"},
          {"action", "TEXT",
           "NOT NULL CHECK (action IN ('baseline', 'keep', 'hold', 'push', 'roll_back'))",
           "WatchActionName"},
          {"reason", "TEXT", "NOT NULL CHECK (reason <> '')"},
          {"drift", "REAL", "NOT NULL CHECK (drift >= 0 AND drift <= 1)"},
          {"window_slices", "INTEGER", "NOT NULL CHECK (window_slices >= 0)"},
          {"in_force_knobs", "TEXT", "NOT NULL", "knob key"},
          {"candidate_knobs", "TEXT", "NOT NULL", "knob key; '' when none"},
          {"predicted_margin", "REAL", "NOT NULL"},
          {"paired_median", "REAL", "NOT NULL", "in force / candidate; 0: not measured"},
          {"paired_low", "REAL", "NOT NULL"},
          {"paired_high", "REAL", "NOT NULL"},
          {"pairs", "INTEGER", "NOT NULL CHECK (pairs >= 0)"},
          {"verdict", "TEXT", "NOT NULL", "PairedOutcomeName; '' when not measured"},
          {"profile_json", "TEXT", "NOT NULL", "the window's messages per log2 size bucket"},
      }};
  return "\n" + CreateTable(watch_events) +
         "CREATE INDEX watch_events_by_time ON watch_events (at);\n";
}

// Schema v10: a link model's points of calls carrying several slices (`artune
// model measure` measures rendezvous calls of 2 and 8 slices): link_model_points
// gains `slices`, in its key, 1 for the points stored before. SQLite cannot change
// a primary key in place: the table is built anew and the rows copied.
std::string SchemaV10() {
  const Table link_model_points = {
      "link_model_points_v10",
      Concat({LinkModelPointColumns(),
              {{"slices", "INTEGER", "NOT NULL DEFAULT 1 CHECK (slices >= 1)", "units per call"}}}),
      {"PRIMARY KEY (model_id, protocol, polling, chunk_size, pipeline_depth, size, inflight, "
       "slices)"},
      /*without_rowid=*/true};
  const std::string columns = ColumnNames(LinkModelPointColumns());
  return "\n" + CreateTable(link_model_points) + "INSERT INTO link_model_points_v10 (" + columns +
         ", slices)\n  SELECT " + columns + ", 1 FROM link_model_points;\n" +
         "DROP TABLE link_model_points;\n" +
         "ALTER TABLE link_model_points_v10 RENAME TO link_model_points;\n";
}

// Schema v12: a cluster run may measure each link's model instead of a sweep
// (`artune sweep --mpi --strategy model`): clusters.measurement admits 'model' and a
// link points at its link model (model_id, NULL for the links stored before and for
// a sweep's). SQLite cannot change a CHECK in place, and dropping `clusters` while
// its children reference it would cascade to them: the three tables are built
// anew under new names (the children referencing the new parent), the rows copied,
// the old ones dropped children first, and the new ones renamed (SQLite rewrites
// the children's references with the parent's name). Rows read back the same.
std::string SchemaV12() {
  const Table clusters = {
      "clusters_v12", ClusterColumns("NOT NULL CHECK (measurement IN ('sweep', 'ab', 'model'))")};
  const std::vector<Column> v7_link_columns =
      ClusterLinkColumns("NOT NULL REFERENCES clusters_v12 (id) ON DELETE CASCADE");
  const Table cluster_links = ClusterLinks(
      "cluster_links_v12",
      Concat({v7_link_columns,
              {{"model_id", "INTEGER", "REFERENCES link_models (id)", "NULL: no link model"}}}));
  const std::string link_columns = ColumnNames(v7_link_columns);
  return "\n" + CreateTable(clusters) +
         "INSERT INTO clusters_v12 (id, created_at, finished_at, ranks, pairs, measurement)\n"
         "  SELECT id, created_at, finished_at, ranks, pairs, measurement FROM clusters;\n\n" +
         KeyValueTable("cluster_parameters_v12", "cluster_id", "clusters_v12 (id)", "name",
                       "TEXT") +
         "INSERT INTO cluster_parameters_v12 (cluster_id, name, value)\n"
         "  SELECT cluster_id, name, value FROM cluster_parameters;\n\n" +
         CreateTable(cluster_links) + "INSERT INTO cluster_links_v12 (" + link_columns +
         ")\n  SELECT " + link_columns + " FROM cluster_links;\n\n" +
         "DROP TABLE cluster_links;\n"
         "DROP TABLE cluster_parameters;\n"
         "DROP TABLE clusters;\n"
         "ALTER TABLE clusters_v12 RENAME TO clusters;\n"
         "ALTER TABLE cluster_parameters_v12 RENAME TO cluster_parameters;\n"
         "ALTER TABLE cluster_links_v12 RENAME TO cluster_links;\n"
         "CREATE INDEX clusters_by_time ON clusters (created_at);\n"
         "CREATE INDEX cluster_links_by_sweep ON cluster_links (sweep_id);\n"
         "CREATE INDEX cluster_links_by_model ON cluster_links (model_id);\n";
}

}  // namespace

// Built once; the Migration entries point into it for the life of the process.
const std::array<std::string, 12>& SchemaTexts() {
  static const std::array<std::string, 12> texts = {
      SchemaV1(), SchemaV2(), SchemaV3(), SchemaV4(),  SchemaV5(),  SchemaV6(),
      SchemaV7(), SchemaV8(), SchemaV9(), SchemaV10(), SchemaV11(), SchemaV12()};
  return texts;
}

}  // namespace artune::db
