#include "home_source.h"

namespace artune::dashboard {

HomeSource::HomeSource(std::string database_path, int rows)
    : store_(std::move(database_path),
             "no store yet: artune probe, sweep and bench record there (or --db)"),
      rows_(rows) {}

HomeSource::~HomeSource() = default;

HomePanel HomeSource::Poll() {
  HomePanel panel;
  panel.store_path = store_.path();
  db::Store* store = store_.Get(panel.error);
  if (store == nullptr) return panel;
  // Each read is its own snapshot; a record landing between them shows next poll.
  Result<db::StoreInfo> info = store->Info();
  Result<std::vector<db::SweepRecord>> sweeps = store->ListSweeps(rows_);
  Result<std::vector<db::CaptureRecord>> captures = store->ListCaptures(rows_);
  Result<std::vector<db::BenchRun>> runs = store->ListBenchRuns(rows_);
  if (store_.Failed({info.status(), sweeps.status(), captures.status(), runs.status()},
                    panel.error)) {
    return panel;
  }
  panel.row_counts = std::move(info->row_counts);
  panel.sweeps = std::move(*sweeps);
  panel.captures = std::move(*captures);
  panel.runs = std::move(*runs);
  return panel;
}

}  // namespace artune::dashboard
