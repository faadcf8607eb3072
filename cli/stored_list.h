// The one shape of a stored-record listing (`artune results`, `artune captures`):
// the newest --limit records as a table, or as one JSON object
// {"db": PATH, "total_<noun>": N, "<noun>": [...]}, with the same --limit check,
// empty-store message and "N newest of M" footer. A store that does not exist yet
// lists as an empty one (exit 0). A command says what its records
// are and how one prints; the listing does the rest.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"
#include "command.h"
#include "format.h"

namespace artune::cli {

// The store for a listing (`artune results`, `captures`, `results --sweeps`): a
// store that does not exist yet holds nothing, which is not an error; then the
// result is nullptr and the listing prints an empty one. Other errors as
// OpenStoreForReading.
inline Result<std::unique_ptr<db::Store>> OpenStoreForListing(const Context& context) {
  Result<std::unique_ptr<db::Store>> store = OpenStoreForReading(context);
  if (!store.ok() && store.status().code() == ErrorCode::kNotFound) {
    return std::unique_ptr<db::Store>();
  }
  return store;
}

template <typename Record>
struct StoredListing {
  std::string_view noun;      // "runs": the JSON keys and the messages
  std::string_view table;     // the store's table, whose row count is the total
  std::string_view command;   // "results": for the `artune COMMAND show ID` hint
  std::string_view kind;      // "bench runs": "No bench runs stored in ..."
  std::string_view recorder;  // "bench": "`artune bench` records one"
  std::function<Result<std::vector<Record>>(db::Store&, int limit)> list;  // newest first
  std::function<nlohmann::ordered_json(const Record&)> json;
  std::vector<std::string> header;
  std::vector<bool> right_aligned;  // as PrintTable
  std::function<std::vector<std::string>(const Record&)> row;
  // How to show one record in full, for the footer; "" means `artune COMMAND show ID`.
  std::string_view show_one = "";
};

template <typename Record>
Status PrintStoredListing(const StoredListing<Record>& listing, int limit, bool json,
                          const Context& context) {
  if (limit < 0) {
    return Status::InvalidArgument("--limit " + std::to_string(limit) +
                                   " is negative: pass 0 for all " + std::string(listing.noun) +
                                   " or a positive count");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForListing(context));
  std::vector<Record> records;
  db::StoreInfo info;  // a store not made yet: its path, no rows
  info.path = db::ResolveDatabasePath(context.globals.db_path);
  if (store != nullptr) {
    ARTUNE_ASSIGN_OR_RETURN(records, listing.list(*store, limit));
    ARTUNE_ASSIGN_OR_RETURN(info, store->Info());
  }
  const auto count = info.row_counts.find(std::string(listing.table));
  const int64_t total = count == info.row_counts.end() ? 0 : count->second;

  if (json) {
    nlohmann::ordered_json out;
    out["db"] = info.path;
    out["total_" + std::string(listing.noun)] = total;
    nlohmann::ordered_json& items = out[std::string(listing.noun)] =
        nlohmann::ordered_json::array();
    for (const Record& record : records) items.push_back(listing.json(record));
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  if (records.empty()) {
    std::cout << "No " << listing.kind << " stored in " << info.path << " yet: `artune "
              << listing.recorder << "` records one.\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {listing.header};
  for (const Record& record : records) rows.push_back(listing.row(record));
  PrintTable(rows, listing.right_aligned, std::cout);
  if (static_cast<int64_t>(records.size()) < total) {
    std::cout << "(" << records.size() << " newest of " << total << " " << listing.noun
              << "; --limit 0 shows all, `artune "
              << (listing.show_one.empty() ? std::string(listing.command) + " show ID"
                                           : std::string(listing.show_one))
              << "` one in full)\n";
  }
  return Status::Ok();
}

}  // namespace artune::cli
