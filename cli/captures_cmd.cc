// artune captures [--limit N] [--json]: the stored captures of `artune probe`,
// newest first. artune captures show ID [--json]: one capture's full profile.
// Both read the store at --db (default: the XDG data directory) and never create it.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/probes/profile_output.h"
#include "artune/tuner/capture_record.h"
#include "command.h"
#include "format.h"
#include "stored_list.h"

namespace artune::cli {
namespace {

struct CapturesOptions {
  bool json = false;
  int limit = 20;
  int64_t show_id = 0;
};

std::vector<std::string> CaptureRow(const db::CaptureRecord& capture) {
  const tuner::CaptureTotals totals = tuner::SummarizeCapture(capture);
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.1f s", capture.duration_s);
  return {std::to_string(capture.id),
          ShortTime(capture.started_at),
          capture.backend,
          capture.process.empty() ? "-" : capture.process,
          duration,
          std::to_string(totals.messages),
          probes::FormatBytes(totals.bytes),
          std::to_string(totals.methods)};
}

Status List(const CapturesOptions& options, const Context& context) {
  const StoredListing<db::CaptureRecord> listing = {
      .noun = "captures",
      .table = "captures",
      .command = "captures",
      .kind = "captures",
      .recorder = "probe",
      .list = [](db::Store& store, int limit) { return store.ListCaptures(limit); },
      .json = tuner::CaptureSummaryJson,
      .header = {"ID", "TIME (UTC)", "BACKEND", "PROCESS", "DURATION", "MESSAGES", "BYTES",
                 "METHODS"},
      .right_aligned = {true, false, false, false, true, true, true, true},
      .row = CaptureRow,
  };
  return PrintStoredListing(listing, options.limit, options.json, context);
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
