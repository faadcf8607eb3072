#include "artune/db/fallback_store.h"

#include <ostream>

namespace artune::db {
namespace {

// A write refused for the storage's sake (not for the record's): worth carrying on
// in memory rather than losing what was measured.
bool IsStorageFailure(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kIoError:
    case ErrorCode::kPermissionDenied:
    case ErrorCode::kTimeout:
    case ErrorCode::kResourceExhausted:
    case ErrorCode::kCorruption:
      return true;
    default:
      return false;
  }
}

const Status& StatusOf(const Status& status) { return status; }
template <typename T>
Status StatusOf(const Result<T>& result) {
  return result.status();
}

}  // namespace

Result<std::unique_ptr<FallbackStore>> FallbackStore::Open(const std::string& path,
                                                           std::ostream& warnings) {
  std::unique_ptr<FallbackStore> store(new FallbackStore(path, warnings));
  Result<std::unique_ptr<Store>> file = Store::Open(path);
  if (!file.ok()) {
    // A file this process may not write may still be read (what a --resume or a
    // --workload needs): carry on with a copy of it.
    Result<std::unique_ptr<Store>> readable = Store::Open(path, OpenMode::kExisting);
    Status why = file.status();
    if (readable.ok()) {
      store->file_ = std::move(*readable);
      // "read-only" says it better than SQLite's "unable to open database file".
      const Status writable = store->file_->CheckWritable();
      if (writable.code() == ErrorCode::kPermissionDenied) why = writable;
    }
    ARTUNE_RETURN_IF_ERROR(store->SwitchToMemory(why));
    return store;
  }
  store->file_ = std::move(*file);
  const Status writable = store->file_->CheckWritable();
  if (writable.code() == ErrorCode::kResourceExhausted) {
    warnings << "artune: warning: " << writable.message()
             << "; measuring anyway: the results are printed even if they cannot be stored\n";
  } else if (!writable.ok()) {
    ARTUNE_RETURN_IF_ERROR(store->SwitchToMemory(writable));
  }
  return store;
}

Status FallbackStore::SwitchToMemory(const Status& why) {
  not_stored_ = why;
  warnings_ << "artune: warning: cannot store in " << path_ << ": " << why.message()
            << "; measuring on: the results are printed but not stored\n";
  if (file_) {
    Result<std::unique_ptr<Store>> copy = file_->CopyToMemory();
    if (copy.ok()) {
      memory_ = std::move(*copy);
      return Status::Ok();
    }
    warnings_ << "artune: warning: cannot read " << path_ << " either (" << copy.status().message()
              << "): going on with an empty store\n";
  }
  ARTUNE_ASSIGN_OR_RETURN(memory_, Store::OpenInMemory());
  return Status::Ok();
}

template <typename Write>
auto FallbackStore::WriteWithFallback(Write write) -> decltype(write(std::declval<Store&>())) {
  if (!memory_) {
    auto written = write(*file_);
    const Status status = StatusOf(written);
    if (status.ok() || !IsStorageFailure(status)) return written;
    ARTUNE_RETURN_IF_ERROR(SwitchToMemory(status));
  }
  return write(*memory_);
}

bool FallbackStore::FileHoldsSweep(int64_t id) { return file_ && file_->GetSweep(id).ok(); }

Status FallbackStore::NotStoredStatus(const std::string& what) const {
  if (!not_stored_) return Status::Ok();
  return Status::IoError(what + ": " + path_ + " could not be written (" + not_stored_->message() +
                         "); the figures above are all there is: keep them, free space or fix "
                         "the permissions (or pass --db with a writable path) and measure again");
}

Status FallbackStore::CheckWritable() { return Active().CheckWritable(); }
Result<std::unique_ptr<Store>> FallbackStore::CopyToMemory() { return Active().CopyToMemory(); }

Result<int64_t> FallbackStore::InsertBenchRun(const BenchRun& run) {
  return WriteWithFallback([&](Store& s) { return s.InsertBenchRun(run); });
}
Result<std::vector<BenchRun>> FallbackStore::ListBenchRuns(int limit) {
  return Active().ListBenchRuns(limit);
}
Result<BenchRun> FallbackStore::GetBenchRun(int64_t id) { return Active().GetBenchRun(id); }
Result<int64_t> FallbackStore::InsertCapture(const CaptureRecord& capture) {
  return WriteWithFallback([&](Store& s) { return s.InsertCapture(capture); });
}
Result<std::vector<CaptureRecord>> FallbackStore::ListCaptures(int limit) {
  return Active().ListCaptures(limit);
}
Result<CaptureRecord> FallbackStore::GetCapture(int64_t id) { return Active().GetCapture(id); }
Result<int64_t> FallbackStore::InsertSweep(const SweepRecord& sweep) {
  return WriteWithFallback([&](Store& s) { return s.InsertSweep(sweep); });
}
Status FallbackStore::FinishSweep(int64_t sweep_id) {
  return WriteWithFallback([&](Store& s) { return s.FinishSweep(sweep_id); });
}
Status FallbackStore::RecordSweepVerdict(int64_t sweep_id, const SweepVerdict& verdict) {
  return WriteWithFallback([&](Store& s) { return s.RecordSweepVerdict(sweep_id, verdict); });
}
Result<std::vector<SweepRecord>> FallbackStore::ListSweeps(int limit) {
  return Active().ListSweeps(limit);
}
Result<SweepRecord> FallbackStore::GetSweep(int64_t id) { return Active().GetSweep(id); }
Result<int64_t> FallbackStore::InsertTrial(const TrialRecord& trial) {
  return WriteWithFallback([&](Store& s) { return s.InsertTrial(trial); });
}
Result<std::vector<TrialRecord>> FallbackStore::ListTrials(int64_t sweep_id) {
  return Active().ListTrials(sweep_id);
}
Result<std::optional<TrialRecord>> FallbackStore::BestTrial(int64_t sweep_id) {
  return Active().BestTrial(sweep_id);
}
Result<int64_t> FallbackStore::InsertCluster(const ClusterRecord& cluster) {
  return WriteWithFallback([&](Store& s) { return s.InsertCluster(cluster); });
}
Status FallbackStore::FinishCluster(int64_t cluster_id) {
  return WriteWithFallback([&](Store& s) { return s.FinishCluster(cluster_id); });
}
Result<std::vector<ClusterRecord>> FallbackStore::ListClusters(int limit) {
  return Active().ListClusters(limit);
}
Result<ClusterRecord> FallbackStore::GetCluster(int64_t id) { return Active().GetCluster(id); }
Status FallbackStore::InsertClusterLink(const ClusterLinkRecord& link) {
  return WriteWithFallback([&](Store& s) { return s.InsertClusterLink(link); });
}
Result<std::vector<ClusterLinkRecord>> FallbackStore::ListClusterLinks(int64_t cluster_id) {
  return Active().ListClusterLinks(cluster_id);
}
Result<int64_t> FallbackStore::InsertLinkModel(const LinkModelRecord& model) {
  return WriteWithFallback([&](Store& s) { return s.InsertLinkModel(model); });
}
Result<std::vector<LinkModelRecord>> FallbackStore::ListLinkModels(int limit) {
  return Active().ListLinkModels(limit);
}
Result<LinkModelRecord> FallbackStore::GetLinkModel(int64_t id) {
  return Active().GetLinkModel(id);
}
Result<int64_t> FallbackStore::InsertPrediction(const PredictionRecord& prediction) {
  return WriteWithFallback([&](Store& s) { return s.InsertPrediction(prediction); });
}
Result<std::vector<PredictionRecord>> FallbackStore::ListPredictions(int limit) {
  return Active().ListPredictions(limit);
}
Result<PredictionRecord> FallbackStore::GetPrediction(int64_t id) {
  return Active().GetPrediction(id);
}
Result<int64_t> FallbackStore::InsertWatchEvent(const WatchEventRecord& event) {
  return WriteWithFallback([&](Store& s) { return s.InsertWatchEvent(event); });
}
Result<std::vector<WatchEventRecord>> FallbackStore::ListWatchEvents(int limit) {
  return Active().ListWatchEvents(limit);
}
Result<StoreInfo> FallbackStore::Info() { return Active().Info(); }

}  // namespace artune::db
