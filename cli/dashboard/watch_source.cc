#include "watch_source.h"

namespace artune::dashboard {

WatchSource::WatchSource(std::string database_path, int rows)
    : database_path_(std::move(database_path)), rows_(rows) {}

WatchSource::~WatchSource() = default;

WatchPanel WatchSource::Poll() {
  WatchPanel panel;
  panel.store_path = database_path_;
  if (store_ == nullptr) {
    Result<std::unique_ptr<db::Store>> opened =
        db::Store::Open(database_path_, db::OpenMode::kExisting);
    if (!opened.ok()) {
      panel.error = opened.status().code() == ErrorCode::kNotFound
                        ? "no store yet: artune watch run records its decisions there (or --db)"
                        : opened.status().message();
      return panel;
    }
    store_ = std::move(*opened);
  }
  Result<db::StoreInfo> info = store_->Info();
  Result<std::vector<db::WatchEventRecord>> events = store_->ListWatchEvents(rows_);
  for (const Status& status : {info.status(), events.status()}) {
    if (!status.ok()) {
      panel.error = status.message();
      store_.reset();  // reopen next time: the file may have been replaced
      return panel;
    }
  }
  const auto total = info->row_counts.find("watch_events");
  panel.total = total == info->row_counts.end() ? 0 : total->second;
  panel.events = std::move(*events);
  return panel;
}

}  // namespace artune::dashboard
