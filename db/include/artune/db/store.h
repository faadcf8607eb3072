// The SQLite store: every bench run (and later capture, sweep and trial) artune
// makes. Plain records in, plain records out; no knowledge of the transport or the
// tuner beyond their values.
//
// The database is in WAL mode with foreign keys on, so readers (dashboard,
// `artune results`) never block a writer. A schema version is kept in
// `PRAGMA user_version`; Open() applies missing migrations in one transaction.
// Every record is written in its own transaction: a killed process leaves either the
// whole record or nothing.
//
// Threading: a Store is used from one thread at a time; open one per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artune/status.h"

namespace artune::db {

// $ARTUNE_DB if set, else $XDG_DATA_HOME/artune/artune.db (XDG_DATA_HOME defaulting
// to ~/.local/share).
std::string DefaultDatabasePath();

struct LatencySummary {
  double p50_us = 0, p99_us = 0, mean_us = 0, stddev_us = 0;
};

// One `artune bench` run.
struct BenchRun {
  int64_t id = 0;           // assigned by InsertBenchRun
  std::string started_at;   // ISO 8601 UTC, assigned by InsertBenchRun when empty
  std::string host;         // hostname of the client side
  std::string peer;         // peer address, or "loopback"
  std::string transport;    // "artune" | "grpc"
  std::string benchmark;    // "latency" | "bandwidth" | "ps"
  std::string scheme;       // "uniform" | "random" | "skew"
  std::string fabric;       // "tcp" | "verbs" | "" (grpc)
  std::map<std::string, std::string> config;      // every effective knob, as text
  std::map<std::string, std::string> parameters;  // workload and run parameters
  uint64_t payload_bytes = 0;
  double duration_s = 0;
  uint64_t rpcs = 0;
  LatencySummary latency;
  double bandwidth_mbps = 0;
  double rpcs_per_s = 0;
  bool validated = false;
};

struct StoreInfo {
  std::string path;
  int schema_version = 0;
  std::map<std::string, int64_t> row_counts;  // table name -> rows
};

class Store {
 public:
  // Opens (creating the file and its directory if needed) and migrates. Errors:
  // kIoError (cannot create or open: the message names the path), kCorruption (not
  // an artune database, or a schema newer than this build knows).
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  virtual ~Store() = default;

  virtual Result<int64_t> InsertBenchRun(const BenchRun& run) = 0;
  // Newest first; limit 0 means all.
  virtual Result<std::vector<BenchRun>> ListBenchRuns(int limit) = 0;
  virtual Result<BenchRun> GetBenchRun(int64_t id) = 0;
  virtual Result<StoreInfo> Info() = 0;
};

}  // namespace artune::db
