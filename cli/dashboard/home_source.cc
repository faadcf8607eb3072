#include "home_source.h"

namespace artune::dashboard {

HomeSource::HomeSource(std::string database_path, int rows)
    : database_path_(std::move(database_path)), rows_(rows) {}

HomeSource::~HomeSource() = default;

HomePanel HomeSource::Poll() {
  HomePanel panel;
  panel.store_path = database_path_;
  if (store_ == nullptr) {
    Result<std::unique_ptr<db::Store>> opened =
        db::Store::Open(database_path_, db::OpenMode::kExisting);
    if (!opened.ok()) {
      panel.error = opened.status().code() == ErrorCode::kNotFound
                        ? "no store yet: artune probe, sweep and bench record there (or --db)"
                        : opened.status().message();
      return panel;
    }
    store_ = std::move(*opened);
  }
  // Each read is its own snapshot; a record landing between them shows next poll.
  Result<db::StoreInfo> info = store_->Info();
  Result<std::vector<db::SweepRecord>> sweeps = store_->ListSweeps(rows_);
  Result<std::vector<db::CaptureRecord>> captures = store_->ListCaptures(rows_);
  Result<std::vector<db::BenchRun>> runs = store_->ListBenchRuns(rows_);
  for (const Status& status : {info.status(), sweeps.status(), captures.status(), runs.status()}) {
    if (!status.ok()) {
      panel.error = status.message();
      store_.reset();  // reopen next time: the file may have been replaced
      return panel;
    }
  }
  panel.row_counts = std::move(info->row_counts);
  panel.sweeps = std::move(*sweeps);
  panel.captures = std::move(*captures);
  panel.runs = std::move(*runs);
  return panel;
}

}  // namespace artune::dashboard
