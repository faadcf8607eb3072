// artune captures [--limit N] [--json]: the stored captures of `artune probe`,
// newest first. artune captures show ID [--json]: one capture's full profile.
// Both read the store at --db (default: the XDG data directory) and never create it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/probes/profile_output.h"
#include "command.h"
#include "format.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

struct CapturesOptions {
  bool json = false;
  int limit = 20;
  int64_t show_id = 0;
};

// "2024-05-01T12:34:56.789Z" -> "2024-05-01 12:34:56"; anything else unchanged.
std::string ShortTime(const std::string& iso8601) {
  if (iso8601.size() < 19 || iso8601[10] != 'T') return iso8601;
  std::string text = iso8601.substr(0, 19);
  text[10] = ' ';
  return text;
}

struct Totals {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  size_t methods = 0;  // distinct method names (both directions count once)
};

Totals Summarize(const db::CaptureRecord& capture) {
  Totals totals;
  std::vector<std::string> names;
  for (const db::CaptureMethodRow& row : capture.methods) {
    totals.messages += row.messages;
    totals.bytes += row.bytes;
    if (std::find(names.begin(), names.end(), row.method) == names.end()) {
      names.push_back(row.method);
    }
  }
  totals.methods = names.size();
  return totals;
}

ordered_json CaptureSummaryJson(const db::CaptureRecord& capture) {
  const Totals totals = Summarize(capture);
  ordered_json j;
  j["id"] = capture.id;
  j["started_at"] = capture.started_at;
  j["backend"] = capture.backend;
  j["process"] = capture.process;
  j["duration_s"] = capture.duration_s;
  j["lost_events"] = capture.lost_events;
  j["messages"] = totals.messages;
  j["bytes"] = totals.bytes;
  j["methods"] = ordered_json::array();
  for (const db::CaptureMethodRow& row : capture.methods) {
    j["methods"].push_back({{"method", row.method},
                            {"direction", row.direction},
                            {"messages", row.messages},
                            {"bytes", row.bytes},
                            {"scheme", row.scheme},
                            {"small", row.small},
                            {"medium", row.medium},
                            {"large", row.large}});
  }
  return j;
}

Status List(const CapturesOptions& options, const Context& context) {
  if (options.limit < 0) {
    return Status::InvalidArgument("--limit " + std::to_string(options.limit) +
                                   " is negative: pass 0 for all captures or a positive count");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<db::CaptureRecord> captures,
                          store->ListCaptures(options.limit));
  ARTUNE_ASSIGN_OR_RETURN(const db::StoreInfo info, store->Info());
  const int64_t total = info.row_counts.count("captures") ? info.row_counts.at("captures") : 0;

  if (options.json) {
    ordered_json out;
    out["db"] = info.path;
    out["total_captures"] = total;
    out["captures"] = ordered_json::array();
    for (const db::CaptureRecord& capture : captures) {
      out["captures"].push_back(CaptureSummaryJson(capture));
    }
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  if (captures.empty()) {
    std::cout << "No captures stored in " << info.path << " yet: `artune probe` records one.\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "TIME (UTC)", "BACKEND", "PROCESS", "DURATION", "MESSAGES", "BYTES", "METHODS"}};
  for (const db::CaptureRecord& capture : captures) {
    const Totals totals = Summarize(capture);
    char duration[32];
    std::snprintf(duration, sizeof duration, "%.1f s", capture.duration_s);
    rows.push_back({std::to_string(capture.id), ShortTime(capture.started_at), capture.backend,
                    capture.process.empty() ? "-" : capture.process, duration,
                    std::to_string(totals.messages), probes::FormatBytes(totals.bytes),
                    std::to_string(totals.methods)});
  }
  PrintTable(rows, {true, false, false, false, true, true, true, true}, std::cout);
  if (static_cast<int64_t>(captures.size()) < total) {
    std::cout << "(" << captures.size() << " newest of " << total
              << " captures; --limit 0 shows all, `artune captures show ID` one in full)\n";
  }
  return Status::Ok();
}

Status Show(const CapturesOptions& options, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const db::CaptureRecord capture, store->GetCapture(options.show_id));
  Result<probes::Profile> profile = probes::ProfileFromJson(capture.profile_json);
  if (!profile.ok()) {
    return profile.status().WithContext("capture " + std::to_string(capture.id) + " in " +
                                        db::ResolveDatabasePath(context.globals.db_path) +
                                        " has an unreadable profile");
  }
  profile->capture_id = capture.id;
  if (options.json) {
    std::cout << probes::ProfileToJson(*profile) << "\n";
    return Status::Ok();
  }
  std::cout << "Capture " << capture.id << "  started " << capture.started_at
            << (capture.process.empty() ? "" : "  process " + capture.process) << "\n";
  std::cout << probes::FormatProfileTable(*profile);
  return Status::Ok();
}

}  // namespace

void RegisterCaptures(CLI::App& root, Context& context) {
  auto options = std::make_shared<CapturesOptions>();
  auto* command = root.add_subcommand(
      "captures",
      "List the stored `artune probe` captures, newest first (`captures show ID` for one)");
  command->add_flag("--json", options->json, "Print one JSON object instead of the table");
  command->add_option("--limit", options->limit, "Show the N newest captures; 0 shows all")
      ->capture_default_str();
  command->footer(
      "Reads the store at --db (default: $ARTUNE_DB, else $XDG_DATA_HOME/artune/artune.db); "
      "`artune probe` writes it.");

  auto* show = command->add_subcommand(
      "show", "Print one stored capture's profile (per-method sizes, histograms, errors)");
  show->add_option("id", options->show_id, "Capture id (the ID column of `artune captures`)")
      ->required();
  // Accepted before or after `show`: both set the same flag.
  show->add_flag("--json", options->json, "Print the profile as one JSON object");

  show->callback(
      [options, &context] { RunCommand(context, [&] { return Show(*options, context); }); });
  command->callback([options, show, &context] {
    if (show->parsed()) return;  // the subcommand did the work
    RunCommand(context, [&] { return List(*options, context); });
  });
}

}  // namespace artune::cli
