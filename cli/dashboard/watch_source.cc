#include "watch_source.h"

namespace artune::dashboard {

WatchSource::WatchSource(std::string database_path, int rows)
    : store_(std::move(database_path),
             "no store yet: artune watch run records its decisions there (or --db)"),
      rows_(rows) {}

WatchSource::~WatchSource() = default;

WatchPanel WatchSource::Poll() {
  WatchPanel panel;
  panel.store_path = store_.path();
  db::Store* store = store_.Get(panel.error);
  if (store == nullptr) return panel;
  Result<db::StoreInfo> info = store->Info();
  Result<std::vector<db::WatchEventRecord>> events = store->ListWatchEvents(rows_);
  if (store_.Failed({info.status(), events.status()}, panel.error)) return panel;
  const auto total = info->row_counts.find("watch_events");
  panel.total = total == info->row_counts.end() ? 0 : total->second;
  panel.events = std::move(*events);
  return panel;
}

}  // namespace artune::dashboard
