// artune db info [--json]: where the store is, its schema version, rows per table and
// size on disk. Reads the store at --db and never creates it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "artune/db/store.h"
#include "command.h"
#include "format.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

Status Info(bool json, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(
      auto store,
      db::Store::Open(db::ResolveDatabasePath(context.globals.db_path), db::OpenMode::kExisting));
  ARTUNE_ASSIGN_OR_RETURN(const db::StoreInfo info, store->Info());
  if (json) {
    ordered_json out;
    out["path"] = info.path;
    out["schema_version"] = info.schema_version;
    out["file_bytes"] = info.file_bytes;
    out["wal_bytes"] = info.wal_bytes;
    out["tables"] = ordered_json::object();
    for (const auto& [table, rows] : info.row_counts) out["tables"][table] = rows;
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  size_t width = 0;
  for (const auto& entry : info.row_counts) width = std::max(width, entry.first.size());
  std::cout << "path            " << info.path << "\n"
            << "schema version  " << info.schema_version << "\n"
            << "size            " << FormatHumanBytes(info.file_bytes);
  if (info.wal_bytes > 0) {
    std::cout << " + " << FormatHumanBytes(info.wal_bytes) << " write-ahead log";
  }
  std::cout << "\nrows per table\n";
  for (const auto& [table, rows] : info.row_counts) {
    std::cout << "  " << table << std::string(width - table.size() + 2, ' ') << rows << "\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterDb(CLI::App& root, Context& context) {
  auto* command = root.add_subcommand("db", "Inspect the SQLite store of runs");
  command->require_subcommand(1);
  command->footer(
      "The store is --db PATH, else $ARTUNE_DB, else $XDG_DATA_HOME/artune/artune.db "
      "(~/.local/share/artune/artune.db).");

  auto json = std::make_shared<bool>(false);
  auto* info = command->add_subcommand(
      "info", "Print the store's path, schema version, rows per table and size on disk");
  info->add_flag("--json", *json, "Print one JSON object");
  info->callback([json, &context] { RunCommand(context, [&] { return Info(*json, context); }); });
}

}  // namespace artune::cli
