// The store a measuring command (bench, sweep) writes to: the file --db names
// while it takes writes, and an in-memory copy of it from the first write it
// refuses, so that nothing measured is lost before it is printed.
//
// Open looks at the file before anything is measured and says at once (a warning
// on `warnings`) when it cannot be written (read-only file, directory or mount,
// a file that cannot be opened) or may not be (under 1 MiB free); measuring goes
// on either way. A write that fails for a storage reason (kIoError: disk full, a
// read-only file; kPermissionDenied; kTimeout: locked past the busy timeout;
// kResourceExhausted; kCorruption) switches every later read and write to a copy
// of the file in memory (Store::CopyToMemory: ids carry on), made at that moment,
// and is retried there; not_stored() then says why. The command prints its results
// as usual and ends with NotStoredStatus (exit 1 unless something worse happened).
//
// Threading: one thread at a time, as any Store.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "artune/db/store.h"

namespace artune::db {

class FallbackStore final : public Store {
 public:
  // Never fails for the file's sake: an unusable file gives a store in memory (with
  // what the file held when it could still be read) and a warning. Errors: memory
  // (kInternal) only.
  static Result<std::unique_ptr<FallbackStore>> Open(const std::string& path,
                                                     std::ostream& warnings);

  // Why writes stopped reaching the file; nullopt while every write did.
  const std::optional<Status>& not_stored() const { return not_stored_; }
  const std::string& path() const { return path_; }
  // Whether the file (not the copy in memory) holds sweep `id`, perhaps in part.
  bool FileHoldsSweep(int64_t id);
  // kIoError naming the file, why it was not written and what to do, prefixed by
  // `what` ("the runs above were not stored"); Ok while nothing was lost.
  Status NotStoredStatus(const std::string& what) const;

  Status CheckWritable() override;
  Result<std::unique_ptr<Store>> CopyToMemory() override;
  Result<int64_t> InsertBenchRun(const BenchRun& run) override;
  Result<std::vector<BenchRun>> ListBenchRuns(int limit) override;
  Result<BenchRun> GetBenchRun(int64_t id) override;
  Result<int64_t> InsertCapture(const CaptureRecord& capture) override;
  Result<std::vector<CaptureRecord>> ListCaptures(int limit) override;
  Result<CaptureRecord> GetCapture(int64_t id) override;
  Result<int64_t> InsertSweep(const SweepRecord& sweep) override;
  Status FinishSweep(int64_t sweep_id) override;
  Status RecordSweepVerdict(int64_t sweep_id, const SweepVerdict& verdict) override;
  Result<std::vector<SweepRecord>> ListSweeps(int limit) override;
  Result<SweepRecord> GetSweep(int64_t id) override;
  Result<int64_t> InsertTrial(const TrialRecord& trial) override;
  Result<std::vector<TrialRecord>> ListTrials(int64_t sweep_id) override;
  Result<std::optional<TrialRecord>> BestTrial(int64_t sweep_id) override;
  Result<int64_t> InsertCluster(const ClusterRecord& cluster) override;
  Status FinishCluster(int64_t cluster_id) override;
  Result<std::vector<ClusterRecord>> ListClusters(int limit) override;
  Result<ClusterRecord> GetCluster(int64_t id) override;
  Status InsertClusterLink(const ClusterLinkRecord& link) override;
  Result<std::vector<ClusterLinkRecord>> ListClusterLinks(int64_t cluster_id) override;
  Result<int64_t> InsertLinkModel(const LinkModelRecord& model) override;
  Result<std::vector<LinkModelRecord>> ListLinkModels(int limit) override;
  Result<LinkModelRecord> GetLinkModel(int64_t id) override;
  Result<int64_t> InsertPrediction(const PredictionRecord& prediction) override;
  Result<std::vector<PredictionRecord>> ListPredictions(int limit) override;
  Result<PredictionRecord> GetPrediction(int64_t id) override;
  Result<int64_t> InsertWatchEvent(const WatchEventRecord& event) override;
  Result<std::vector<WatchEventRecord>> ListWatchEvents(int limit) override;
  Result<StoreInfo> Info() override;

 private:
  FallbackStore(std::string path, std::ostream& warnings)
      : path_(std::move(path)), warnings_(warnings) {}

  // Carries on in memory from now on: a copy of the file (or an empty store when
  // it cannot be read); `why` is kept for not_stored().
  Status SwitchToMemory(const Status& why);
  Store& Active() { return memory_ ? *memory_ : *file_; }
  // Runs `write` on the file while it takes writes; a storage failure switches to
  // memory and runs it there.
  template <typename Write>
  auto WriteWithFallback(Write write) -> decltype(write(std::declval<Store&>()));

  std::string path_;
  std::ostream& warnings_;
  std::unique_ptr<Store> file_;    // null when the file could not be opened at all
  std::unique_ptr<Store> memory_;  // set once writes go to memory
  std::optional<Status> not_stored_;
};

}  // namespace artune::db
