// The SQLite store: every bench run, capture, sweep and trial artune makes. Plain records in, plain
// records out; no knowledge of the transport or the tuner beyond their values.
//
// The database is in WAL mode with foreign keys on, so readers (dashboard,
// `artune results`) never block a writer. A schema version is kept in
// `PRAGMA user_version`; Open() applies missing migrations in one transaction.
// Every record is written in its own transaction: a killed process leaves either the
// whole record or nothing.
//
// Threading: a Store is used from one thread at a time; open one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"

namespace artune::db {

// $ARTUNE_DB if set, else $XDG_DATA_HOME/artune/artune.db (XDG_DATA_HOME defaulting
// to ~/.local/share).
std::string DefaultDatabasePath();

// The path a command should use: `flag_value` (the global --db option) when it is
// not empty, else DefaultDatabasePath().
std::string ResolveDatabasePath(const std::string& flag_value);

struct LatencySummary {
  double p50_us = 0, p99_us = 0, mean_us = 0, stddev_us = 0;
};

// One `artune bench` run.
struct BenchRun {
  int64_t id = 0;                             // assigned by InsertBenchRun
  std::string started_at;                     // ISO 8601 UTC, assigned by InsertBenchRun when empty
  std::string host;                           // hostname of the client side
  std::string peer;                           // peer address, or "loopback"
  std::string transport;                      // "artune" | "grpc"
  std::string benchmark;                      // "latency" | "bandwidth" | "ps"
  std::string scheme;                         // "uniform" | "random" | "skew"
  std::string fabric;                         // "tcp" | "verbs" | "" (grpc)
  std::map<std::string, std::string> config;  // every effective knob, as text
  std::map<std::string, std::string> parameters;  // workload and run parameters
  uint64_t payload_bytes = 0;
  double duration_s = 0;
  uint64_t rpcs = 0;
  LatencySummary latency;
  double bandwidth_mbps = 0;
  double rpcs_per_s = 0;
  bool validated = false;
};

// One method and direction of a capture: the totals SQL can query directly.
struct CaptureMethodRow {
  std::string method;     // gRPC :path, or "unknown"; not empty
  std::string direction;  // "request" | "response"
  uint64_t messages = 0;
  uint64_t bytes = 0;
  std::string scheme;  // payload scheme the probes classified ("uniform", ...)
  uint64_t small = 0, medium = 0, large = 0;  // messages per size class
};

// One `artune probe` capture. The store keeps `profile_json` as given (the probes'
// JSON, with histograms and connections) and does not parse it.
struct CaptureRecord {
  int64_t id = 0;          // assigned by InsertCapture
  std::string started_at;  // ISO 8601 UTC, assigned by InsertCapture when empty
  std::string backend;     // "pcap" | "ebpf" | ...; not empty
  std::string process;     // traced process, "" when not known
  double duration_s = 0;
  uint64_t lost_events = 0;
  std::string profile_json;               // not empty
  std::vector<CaptureMethodRow> methods;  // unique by (method, direction)
};

// How a measurement (a trial, a re-measurement, a finalist's pooled rounds) ended.
// The store keeps the words of TrialStatusName, the same words it has always kept,
// so stores written before this type read back unchanged; JSON prints them too.
enum class TrialStatus {
  kOk,       // "ok": measured; see `validated` for whether every payload matched
  kInvalid,  // "invalid": payload validation failed (a config that corrupts data)
  kFailed,   // "failed": an error (a refused config, a transport failure)
};
std::string_view TrialStatusName(TrialStatus status);
// The inverse of TrialStatusName; nullopt for any other text.
std::optional<TrialStatus> ParseTrialStatus(std::string_view text);

// One point of a sweep's search space, measured.
struct TrialRecord {
  int64_t id = 0;        // assigned by InsertTrial
  int64_t sweep_id = 0;  // must name a stored sweep
  // The swept knobs and their values as FormatKnobValue text; not empty. Names and
  // values may not contain '=' or ';' (the key's separators).
  std::map<std::string, std::string> knobs;
  TrialStatus status = TrialStatus::kFailed;  // until measured
  double objective = 0;                       // the sweep's objective (median over samples); finite
  double ci_low = 0, ci_high = 0;             // confidence interval of the median; finite
  uint64_t samples = 0;                       // measurements behind the median
  uint64_t remeasured = 0;                    // times the trial was re-measured as unstable
  bool validated = false;                     // every payload checksum matched
  std::string error;                          // why an invalid or failed trial is so; "" when ok
  std::string started_at;                     // ISO 8601 UTC, assigned by InsertTrial when empty
  double duration_s = 0;                      // wall time of the trial, warm-up included
  std::map<std::string, std::string> config;  // the full effective config of the trial
  std::map<std::string, double> metrics;      // p50_us, p99_us, bandwidth_mbps, ...; finite
};

// What a sweep concluded about its best config against the transport's defaults
// (tuner::RunSweep decides, after measuring the default once more at the end). The
// store and JSON use the words of VerdictName, as they always have.
enum class Verdict {
  // "beats_default": the best trial's confidence interval is clear of the default's,
  // every way they were measured (tuner/sweep.h: DecideVerdict);
  kBeatsDefault,
  kWithinNoise,    // "within_noise": the best is another config, but the intervals overlap
  kDefaultIsBest,  // "default_is_best": the best trial is the default config itself
  kNoValidTrial,   // "no_valid_trial": no trial is ok and validated
};
std::string_view VerdictName(Verdict verdict);
// The inverse of VerdictName; nullopt for any other text.
std::optional<Verdict> ParseVerdict(std::string_view text);

// One config of a sweep's final round (schema v6): at the end of the search the
// best few configs and the default are measured again in interleaved rounds
// (tuner/sweep.h), so that drift hits all alike and the winner is chosen on fresh
// measurements, not on the luckiest search trial.
struct FinalistRecord {
  // Not a trial (id 0). objective, ci_low and ci_high are the median and its
  // interval over every sample of every round; samples counts them; remeasured is
  // the number of rounds after the first; duration_s sums the rounds; metrics are
  // the medians over the rounds; config reads back empty (base config + knobs).
  TrialRecord pooled;
  // Rounds in which this config's median beat the default's median of the same
  // round (a round it failed or corrupted in is lost).
  uint32_t rounds_won = 0;
};

// A sweep's verdict, kept with the sweep (one per sweep; a resumed sweep decides
// again and replaces it).
struct SweepVerdict {
  Verdict verdict = Verdict::kNoValidTrial;
  // TrialKnobKey of the best trial judged; "" exactly when verdict is
  // Verdict::kNoValidTrial.
  std::string best_knobs;
  std::string decided_at;  // ISO 8601 UTC, assigned by RecordSweepVerdict when empty
  // The default config measured again after the search; not one of the sweep's
  // trials (read back with id 0). Its `config` is not stored: it is the sweep's
  // base_config, and reads back empty. nullopt when the default was not
  // re-measured.
  std::optional<TrialRecord> default_remeasured;
  // The best trial's config measured again just before the default's
  // re-measurement, so the two are judged back to back, free of the winner's curse
  // (the best of many noisy trials is optimistic) and of load drift. Read back like
  // default_remeasured (schema v5); nullopt when not re-measured (no best, the best
  // is the default, or a sweep decided before v5).
  std::optional<TrialRecord> best_remeasured;
  // The final round (schema v6): the number of interleaved rounds, and every
  // finalist's pooled measurement, the winner (best_knobs) first, then by pooled
  // objective. With a final round default_remeasured and best_remeasured are the
  // pooled measurements of the default and of the winner. 0 and empty for a sweep
  // decided without one (before v6, or with the final round turned off).
  uint32_t final_rounds = 0;
  std::vector<FinalistRecord> finalists;

  bool best_beats_default() const { return verdict == Verdict::kBeatsDefault; }
};

// One `artune sweep`: what was searched, how, over which workload and link. The
// trials are separate records (TrialRecord), each committed on its own.
struct SweepRecord {
  int64_t id = 0;             // assigned by InsertSweep
  std::string created_at;     // ISO 8601 UTC, assigned by InsertSweep when empty
  std::string finished_at;    // set by FinishSweep; "" while running or when killed
  std::string host;           // hostname of the client side
  std::string peer;           // peer address, or "loopback"
  std::string fabric;         // "tcp" | "verbs"; not empty
  std::string objective;      // "latency-p50" | "latency-p99" | "bandwidth" | ...; not empty
  std::string goal;           // "min" (latencies, times) | "max" (throughputs)
  std::string strategy;       // "grid" | "adaptive"; not empty
  std::string workload;       // "scheme:skew" | "capture:12"; not empty
  std::string search_space;   // canonical knob specs, e.g. "eager_threshold=256B..256KiB:x4"
  std::string default_knobs;  // TrialKnobKey of the transport's defaults for the swept knobs
  std::map<std::string, std::string> base_config;  // every knob the trials start from
  std::map<std::string, std::string> parameters;   // repeats, durations, seeds (for --resume)
  // CPU hogs that ran beside every measurement of the sweep (`--background-load`,
  // schema v8); 0: none (and every sweep stored before v8).
  uint32_t background_load = 0;
  // Set by RecordSweepVerdict (normally just before FinishSweep); nullopt while the
  // sweep runs, when it was killed before deciding, or when a build older than
  // schema v4 ran it. Ignored by InsertSweep.
  std::optional<SweepVerdict> verdict;
};

// One `artune sweep --mpi` run over a cluster (schema v7): which ranks took part,
// how they were paired, what each pair measured. Its links are ClusterLinkRecords;
// each link's measurement is an ordinary sweep (SweepRecord) the link points at,
// so everything that reads one sweep reads one link, or (measurement "model",
// schema v12) an ordinary link model (LinkModelRecord).
struct ClusterRecord {
  int64_t id = 0;           // assigned by InsertCluster
  std::string created_at;   // ISO 8601 UTC, assigned by InsertCluster when empty
  std::string finished_at;  // set by FinishCluster; "" while running or when killed
  uint32_t ranks = 0;       // MPI ranks (hosts, or devices); at least 2
  std::string pairs;        // the pair schedule: "ring" | "all" | "random:K"; not empty
  std::string measurement;  // "sweep" | "ab" | "model"
  // What --resume needs to run the same schedule and measurement again: the sweep
  // plan (tuner::SweepParameters), the schedule's seed, the A/B config.
  std::map<std::string, std::string> parameters;
};

// How a link's measurement ended. The store keeps the words of LinkStatusName.
enum class LinkStatus {
  kOk,      // "ok": measured; its sweep holds the trials and the verdict (its model)
  kFailed,  // "failed": the peer was unreachable or the measurement failed; see error
};
std::string_view LinkStatusName(LinkStatus status);
// The inverse of LinkStatusName; nullopt for any other text.
std::optional<LinkStatus> ParseLinkStatus(std::string_view text);

// One measured pair of a cluster run: the client rank measured against the server
// rank in the given round of the schedule. A link is stored once it is finished
// (ok or failed), so a killed run keeps every finished link; --resume measures the
// others and measures a failed link again (its new result replaces it).
struct ClusterLinkRecord {
  int64_t cluster_id = 0;                     // must name a stored cluster
  uint32_t round = 0;                         // 0-based round of the schedule
  uint32_t pair = 0;                          // 0-based pair within the round
  uint32_t client_rank = 0, server_rank = 0;  // different, each below the cluster's ranks
  std::string client_host, server_host;       // hostnames
  // The device each end measured over: "rxe0" (a verbs device) or "tcp:eth0" (the
  // network interface of its address); tuner/link_device.h names them.
  std::string client_device, server_device;
  LinkStatus status = LinkStatus::kFailed;
  std::string error;        // why a failed link failed; "" when ok
  int64_t sweep_id = 0;     // the link's sweep (must be stored); 0: none (a failed link)
  std::string finished_at;  // ISO 8601 UTC, assigned by InsertClusterLink when empty
  // The link's model (schema v12, a "model" run; must be stored); 0: none (a sweep's
  // link, a failed one, or one stored before v12). An ok link has a sweep or a model.
  int64_t model_id = 0;
};

// One measured point of a link model (schema v9): the median wall time per call of
// calls carrying one unit of `protocol` of `size` bytes, `inflight` calls deep.
struct LinkModelPointRow {
  std::string protocol;         // transport::ProtocolName: "eager", "chunked-rendezvous", ...
  std::string polling;          // "busy" | "event" | "adaptive"
  uint64_t chunk_size = 0;      // chunked-rendezvous only; 0 otherwise
  uint32_t pipeline_depth = 0;  // chunked-rendezvous only; 0 otherwise
  uint64_t size = 0;
  uint32_t inflight = 1;                       // at least 1
  double median_s = 0, low_s = 0, high_s = 0;  // finite
  uint32_t rounds = 1;                         // at least 1
  uint32_t slices = 1;  // units per call (schema v10; 1 in rows stored before)
};

// One `artune model measure` (schema v9): a link's per-protocol costs.
struct LinkModelRecord {
  int64_t id = 0;          // assigned by InsertLinkModel
  std::string created_at;  // ISO 8601 UTC, assigned by InsertLinkModel when empty
  std::string host;        // hostname of the client side
  std::string peer;        // "loopback" or host:port
  std::string fabric;      // "tcp" | "shm" | "verbs"; not empty
  uint32_t rounds = 1;     // interleaved rounds measured; at least 1
  double duration_s = 0;
  std::vector<LinkModelPointRow> points;  // unique by every field up to inflight
};

// One `artune predict` (schema v9): the best config of a search space for a
// workload by a link model, and its full config (what `apply config --prediction`
// writes).
struct PredictionRecord {
  int64_t id = 0;          // assigned by InsertPrediction
  std::string created_at;  // ISO 8601 UTC, assigned by InsertPrediction when empty
  int64_t model_id = 0;    // must name a stored link model
  std::string workload;    // "capture:12" | "scheme:skew"; not empty
  std::string search_space;
  double inflight = 0;
  uint32_t configs = 0;    // configs costed; at least 1
  std::string best_knobs;  // TrialKnobKey of the best; not empty
  double best_s = 0;       // predicted seconds of one pass
  std::string default_knobs;
  double default_s = 0;
  std::string summary;                        // the deciding terms, one per line
  std::map<std::string, std::string> config;  // every knob of the best config
};

// What `artune watch` did at one decision (schema v10). The store keeps the words of
// WatchActionName.
enum class WatchAction {
  kBaseline,  // "baseline": the first window with enough traffic; the reference profile
  kKeep,      // "keep": the profile drifted, but no config is predicted or measured better
  kHold,      // "hold": a better config waits for the guard rails (gap, changes per hour)
  kPush,      // "push": measured faster beyond noise on the live link and pushed
  kRollBack,  // "roll_back": the pushed config measured slower than the one before it
};
std::string_view WatchActionName(WatchAction action);
std::optional<WatchAction> ParseWatchAction(std::string_view text);

// One decision of `artune watch`, with its evidence: what the traffic looked like,
// what the model predicted and what the paired A/B on the live link measured.
struct WatchEventRecord {
  int64_t id = 0;       // assigned by InsertWatchEvent
  std::string at;       // ISO 8601 UTC, assigned by InsertWatchEvent when empty
  std::string servers;  // the watched control addresses, comma-separated; not empty
  WatchAction action = WatchAction::kKeep;
  std::string reason;           // one line; not empty
  double drift = 0;             // of the window's size profile from the reference, 0..1
  uint64_t window_slices = 0;   // messages the window's profile was read from
  std::string in_force_knobs;   // TrialKnobKey of the searched knobs in force
  std::string candidate_knobs;  // the predicted best's; "" when nothing was predicted
  double predicted_margin = 0;  // (in force - candidate) / in force, predicted
  // The paired A/B: in-force pass time over candidate pass time, median and
  // interval over `pairs` pairs; all 0 and verdict "" when nothing was measured.
  double paired_median = 0, paired_low = 0, paired_high = 0;
  uint32_t pairs = 0;
  std::string verdict;       // "faster" | "slower" | "within_noise" | "too_few_pairs" | ""
  std::string profile_json;  // the window: messages per log2 size bucket
};

// The canonical text of a trial's knob values: "name=value" pairs in name order
// joined by ';' ("chunk_size=64KiB;eager_threshold=4KiB"). Two trials of one sweep
// with the same key are the same point; the store keeps at most one.
std::string TrialKnobKey(const std::map<std::string, std::string>& knobs);
// The inverse of TrialKnobKey. kInvalidArgument for text TrialKnobKey cannot produce.
Result<std::map<std::string, std::string>> ParseTrialKnobKey(std::string_view key);

struct StoreInfo {
  std::string path;
  int schema_version = 0;
  std::map<std::string, int64_t> row_counts;  // table name -> rows
  uint64_t file_bytes = 0;                    // the main database file
  uint64_t wal_bytes = 0;                     // the write-ahead log (<path>-wal), 0 when absent
};

enum class OpenMode {
  kCreate,    // create the file (and its directory) when missing: for writers
  kExisting,  // fail with kNotFound when missing: for commands that only read. A store
              // this user may not write (file or directory) is opened read-only and
              // must already have the newest schema (else kPermissionDenied).
};

class Store {
 public:
  // Opens (creating the file and its directory if needed, unless mode is kExisting),
  // switches to WAL mode and migrates to the newest schema this build knows.
  // Errors: kNotFound (kExisting and no file: the message says how to make one),
  // kIoError (cannot create or open: the message names the path), kCorruption (not
  // a SQLite file, another application's database, or a schema newer than this
  // build knows: the message gives both versions), kTimeout (another process held
  // the lock past the 5 s busy timeout).
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             OpenMode mode = OpenMode::kCreate);
  // An empty store in memory, at the newest schema: what a command measures into
  // when its store cannot be written (it prints what it measured and says so).
  static Result<std::unique_ptr<Store>> OpenInMemory();
  virtual ~Store() = default;

  // Whether a write would succeed now, looked at without writing (before minutes
  // of measuring): Ok; kPermissionDenied when the store is read-only to this
  // process (file, directory or mount: every write would fail);
  // kResourceExhausted when its file system has less than 1 MiB free (a write may
  // fail). The message says what to do. A store in memory is always writable.
  virtual Status CheckWritable() = 0;
  // A copy of everything stored, in memory, at the newest schema: rows keep their
  // ids and new rows continue the numbering, so a command whose store stopped
  // taking writes carries on where it was. Reads this store only (works on a
  // read-only one). Errors: the store's read errors; memory (kInternal).
  virtual Result<std::unique_ptr<Store>> CopyToMemory() = 0;

  // Stores the run, its config and its parameters in one transaction and returns
  // the new id. `run.id` is ignored; an empty `run.started_at` becomes now (UTC).
  // Errors: kInvalidArgument (an empty transport, benchmark, knob or parameter
  // name; a count past INT64_MAX), kTimeout, kIoError.
  virtual Result<int64_t> InsertBenchRun(const BenchRun& run) = 0;
  // Newest first (by started_at, then id), each with its config and parameters,
  // read from one snapshot. limit 0 means all; a negative limit is kInvalidArgument.
  virtual Result<std::vector<BenchRun>> ListBenchRuns(int limit) = 0;
  // kNotFound when no run has this id.
  virtual Result<BenchRun> GetBenchRun(int64_t id) = 0;

  // Stores the capture and its method rows in one transaction and returns the new
  // id. `capture.id` is ignored; an empty `started_at` becomes now (UTC).
  // Errors: kInvalidArgument (empty backend, profile_json or method name; a
  // repeated method and direction; a count past INT64_MAX), kTimeout, kIoError.
  virtual Result<int64_t> InsertCapture(const CaptureRecord& capture) = 0;
  // Newest first (by started_at, then id), each with its method rows (sorted by
  // method, then direction), read from one snapshot. limit 0 means all; a negative
  // limit is kInvalidArgument.
  virtual Result<std::vector<CaptureRecord>> ListCaptures(int limit) = 0;
  // kNotFound when no capture has this id.
  virtual Result<CaptureRecord> GetCapture(int64_t id) = 0;

  // Stores the sweep, its base config and parameters in one transaction and returns
  // the new id. `sweep.id` and `finished_at` are ignored; an empty created_at
  // becomes now (UTC). Errors: kInvalidArgument (an empty fabric, objective,
  // strategy or workload; goal not "min" or "max"; an empty config or parameter
  // name), kTimeout, kIoError.
  virtual Result<int64_t> InsertSweep(const SweepRecord& sweep) = 0;
  // Marks the sweep finished now (UTC). kNotFound when no sweep has this id.
  virtual Status FinishSweep(int64_t sweep_id) = 0;
  // Stores the sweep's verdict, with its re-measured default and that
  // measurement's metrics, in one transaction, replacing any verdict the sweep had
  // (a resumed sweep decides again). An empty decided_at (and an empty
  // default_remeasured->started_at) becomes now (UTC); default_remeasured->id and
  // sweep_id are ignored. Errors: kNotFound (no such sweep), kInvalidArgument
  // (best_knobs empty for a verdict other than no_valid_trial, set for
  // no_valid_trial, or not TrialKnobKey text; for default_remeasured,
  // best_remeasured and each finalist: what InsertTrial refuses — empty or
  // malformed knobs, a non-finite number, a
  // count past INT64_MAX; finalists with the same knobs; a finalist that won more
  // rounds than final_rounds), kTimeout, kIoError.
  virtual Status RecordSweepVerdict(int64_t sweep_id, const SweepVerdict& verdict) = 0;
  // Newest first (by created_at, then id), each with its base config,
  // parameters and verdict, read from one snapshot. limit 0 means all; negative is
  // kInvalidArgument.
  virtual Result<std::vector<SweepRecord>> ListSweeps(int limit) = 0;
  // With its base config, parameters and verdict. kNotFound when no sweep has this
  // id (the message says how to list them).
  virtual Result<SweepRecord> GetSweep(int64_t id) = 0;

  // Stores one trial with its config and metrics in its own transaction, so a
  // killed sweep keeps every trial it finished. Errors: kNotFound (no such sweep),
  // kAlreadyExists (the sweep already has a trial with these knobs: a resumed sweep
  // must skip it), kInvalidArgument (empty knobs, a knob name or value with '=' or
  // ';', a non-finite number, a count past INT64_MAX),
  // kTimeout, kIoError.
  virtual Result<int64_t> InsertTrial(const TrialRecord& trial) = 0;
  // The sweep's trials in the order they were stored, each with knobs, config and
  // metrics. kNotFound when no sweep has this id.
  virtual Result<std::vector<TrialRecord>> ListTrials(int64_t sweep_id) = 0;
  // The best trial with status "ok" and validated, by the sweep's goal (lowest
  // objective for "min", highest for "max"; ties go to the earlier trial);
  // std::nullopt when the sweep has none. kNotFound when no sweep has this id.
  virtual Result<std::optional<TrialRecord>> BestTrial(int64_t sweep_id) = 0;

  // Stores a cluster run with its parameters in one transaction and returns the
  // new id. `cluster.id` and `finished_at` are ignored; an empty created_at becomes
  // now (UTC). Errors: kInvalidArgument (fewer than 2 ranks, empty pairs, a
  // measurement other than "sweep" or "ab", an empty parameter name), kTimeout,
  // kIoError.
  virtual Result<int64_t> InsertCluster(const ClusterRecord& cluster) = 0;
  // Marks the cluster run finished now (UTC). kNotFound when no cluster has this id.
  virtual Status FinishCluster(int64_t cluster_id) = 0;
  // Newest first (by created_at, then id), each with its parameters, read from one
  // snapshot. limit 0 means all; negative is kInvalidArgument.
  virtual Result<std::vector<ClusterRecord>> ListClusters(int limit) = 0;
  // With its parameters. kNotFound when no cluster has this id (the message says
  // how to list them).
  virtual Result<ClusterRecord> GetCluster(int64_t id) = 0;
  // Stores one finished link in its own transaction, replacing the same link
  // (client and server rank, round and pair) stored failed: a resumed run measures
  // a failed link again. The failed link's sweep stays, unreferenced by the link.
  // Errors: kNotFound (no such cluster, or a sweep_id that names no sweep),
  // kAlreadyExists (the cluster has this client and server rank, or this round and
  // pair, stored ok, or stored failed as another link: a resumed run skips an ok
  // link), kInvalidArgument (client and server rank equal or not below the cluster's
  // ranks, an ok link without a sweep, a failed link without an error), kTimeout,
  // kIoError.
  virtual Status InsertClusterLink(const ClusterLinkRecord& link) = 0;
  // The cluster's links by round, then pair. kNotFound when no cluster has this id.
  virtual Result<std::vector<ClusterLinkRecord>> ListClusterLinks(int64_t cluster_id) = 0;

  // Stores a link model and its points in one transaction; returns the new id.
  // Errors: kInvalidArgument (empty fabric, no point, zero rounds or inflight, a
  // point repeated, a non-finite time), kTimeout, kIoError.
  virtual Result<int64_t> InsertLinkModel(const LinkModelRecord& model) = 0;
  // Newest first, each with its points, from one snapshot; limit 0: all, negative:
  // kInvalidArgument.
  virtual Result<std::vector<LinkModelRecord>> ListLinkModels(int limit) = 0;
  // With its points. kNotFound when no model has this id (the message says how to
  // make one).
  virtual Result<LinkModelRecord> GetLinkModel(int64_t id) = 0;
  // Stores a prediction and its best config in one transaction; returns the new id.
  // Errors: kNotFound (no such link model), kInvalidArgument (empty workload or
  // best_knobs, zero configs, a non-finite number, an empty knob name), kTimeout,
  // kIoError.
  virtual Result<int64_t> InsertPrediction(const PredictionRecord& prediction) = 0;
  // Newest first, each with its config; limit as ListLinkModels.
  virtual Result<std::vector<PredictionRecord>> ListPredictions(int limit) = 0;
  // kNotFound when no prediction has this id.
  virtual Result<PredictionRecord> GetPrediction(int64_t id) = 0;

  // Stores one watch decision; returns the new id. Errors: kInvalidArgument (empty
  // servers or reason, drift outside 0..1, a non-finite number), kTimeout, kIoError.
  virtual Result<int64_t> InsertWatchEvent(const WatchEventRecord& event) = 0;
  // Newest first; limit as ListLinkModels.
  virtual Result<std::vector<WatchEventRecord>> ListWatchEvents(int limit) = 0;

  virtual Result<StoreInfo> Info() = 0;
};

}  // namespace artune::db
