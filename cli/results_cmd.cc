// artune results [--limit N] [--json]: the stored bench runs, newest first.
// artune results show ID [--json]: one run with its full config and parameters.
// Both read the store at --db (default: the XDG data directory) and never create it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "artune/db/store.h"
#include "command.h"
#include "format.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

struct ResultsOptions {
  bool json = false;
  int limit = 20;
  int64_t show_id = 0;
};

std::string FormatNumber(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// "2024-05-01T12:34:56.789Z" -> "2024-05-01 12:34:56"; anything else unchanged.
std::string ShortTime(const std::string& iso8601) {
  if (iso8601.size() < 19 || iso8601[10] != 'T') return iso8601;
  std::string text = iso8601.substr(0, 19);
  text[10] = ' ';
  return text;
}

ordered_json RunJson(const db::BenchRun& run) {
  ordered_json j;
  j["id"] = run.id;
  j["started_at"] = run.started_at;
  j["host"] = run.host;
  j["peer"] = run.peer;
  j["transport"] = run.transport;
  j["benchmark"] = run.benchmark;
  j["scheme"] = run.scheme;
  j["fabric"] = run.fabric;
  j["payload_bytes"] = run.payload_bytes;
  j["duration_s"] = run.duration_s;
  j["rpcs"] = run.rpcs;
  j["latency_us"] = {{"p50", run.latency.p50_us},
                     {"p99", run.latency.p99_us},
                     {"mean", run.latency.mean_us},
                     {"stddev", run.latency.stddev_us}};
  j["bandwidth_mbps"] = run.bandwidth_mbps;
  j["rpcs_per_s"] = run.rpcs_per_s;
  j["validated"] = run.validated;
  j["config"] = run.config;
  j["parameters"] = run.parameters;
  return j;
}

Status List(const ResultsOptions& options, const Context& context) {
  if (options.limit < 0) {
    return Status::InvalidArgument("--limit " + std::to_string(options.limit) +
                                   " is negative: pass 0 for all runs or a positive count");
  }
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<db::BenchRun> runs,
                          store->ListBenchRuns(options.limit));
  ARTUNE_ASSIGN_OR_RETURN(const db::StoreInfo info, store->Info());
  const int64_t total = info.row_counts.count("bench_runs") ? info.row_counts.at("bench_runs") : 0;

  if (options.json) {
    ordered_json out;
    out["db"] = info.path;
    out["total_runs"] = total;
    out["runs"] = ordered_json::array();
    for (const db::BenchRun& run : runs) out["runs"].push_back(RunJson(run));
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  if (runs.empty()) {
    std::cout << "No bench runs stored in " << info.path << " yet: `artune bench` records one.\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {{"ID", "TIME (UTC)", "TRANSPORT", "BENCHMARK",
                                                 "SCHEME", "PAYLOAD", "P50 µs", "P99 µs", "MB/s",
                                                 "RPC/s", "VALIDATED"}};
  for (const db::BenchRun& run : runs) {
    rows.push_back({std::to_string(run.id), ShortTime(run.started_at), run.transport, run.benchmark,
                    run.scheme, FormatHumanBytes(run.payload_bytes),
                    FormatNumber(run.latency.p50_us, 1), FormatNumber(run.latency.p99_us, 1),
                    FormatNumber(run.bandwidth_mbps, 1), FormatNumber(run.rpcs_per_s, 0),
                    run.validated ? "yes" : "NO"});
  }
  PrintTable(rows, {true, false, false, false, false, true, true, true, true, true, false},
             std::cout);
  if (static_cast<int64_t>(runs.size()) < total) {
    std::cout << "(" << runs.size() << " newest of " << total
              << " runs; --limit 0 shows all, `artune results show ID` one in full)\n";
  }
  return Status::Ok();
}

Status Show(const ResultsOptions& options, const Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(auto store, OpenStoreForReading(context));
  ARTUNE_ASSIGN_OR_RETURN(const db::BenchRun run, store->GetBenchRun(options.show_id));
  if (options.json) {
    std::cout << RunJson(run).dump(2) << "\n";
    return Status::Ok();
  }
  std::cout << "Bench run " << run.id << "\n";
  const std::string latency = "p50 " + FormatNumber(run.latency.p50_us, 2) + " µs, p99 " +
                              FormatNumber(run.latency.p99_us, 2) + " µs, mean " +
                              FormatNumber(run.latency.mean_us, 2) + " µs, stddev " +
                              FormatNumber(run.latency.stddev_us, 2) + " µs";
  std::vector<std::vector<std::string>> summary = {
      {"  started", run.started_at},
      {"  host", run.host},
      {"  peer", run.peer},
      {"  transport", run.transport + (run.fabric.empty() ? "" : " over " + run.fabric)},
      {"  benchmark", run.benchmark},
      {"  scheme", run.scheme},
      {"  payload",
       FormatHumanBytes(run.payload_bytes) + " (" + std::to_string(run.payload_bytes) + " bytes)"},
      {"  duration", FormatNumber(run.duration_s, 2) + " s, " + std::to_string(run.rpcs) + " RPCs"},
      {"  latency", latency},
      {"  bandwidth", FormatNumber(run.bandwidth_mbps, 1) + " MB/s"},
      {"  throughput", FormatNumber(run.rpcs_per_s, 1) + " RPC/s"},
      {"  validated", run.validated ? "yes (every response checksum matched)" : "NO"},
  };
  PrintTable(summary, {}, std::cout);
  for (const auto& [title, pairs] :
       {std::pair{"Config", &run.config}, std::pair{"Parameters", &run.parameters}}) {
    std::cout << title << (pairs->empty() ? ": (none)\n" : ":\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& [key, value] : *pairs) rows.push_back({"  " + key, value});
    PrintTable(rows, {}, std::cout);
  }
  return Status::Ok();
}

}  // namespace

void RegisterResults(CLI::App& root, Context& context) {
  auto options = std::make_shared<ResultsOptions>();
  auto* command = root.add_subcommand(
      "results", "List the stored bench runs, newest first (`results show ID` for one in full)");
  command->add_flag("--json", options->json, "Print one JSON object instead of the table");
  command->add_option("--limit", options->limit, "Show the N newest runs; 0 shows all")
      ->capture_default_str();
  command->footer(
      "Reads the store at --db (default: $ARTUNE_DB, else $XDG_DATA_HOME/artune/artune.db); "
      "`artune bench` writes it.");

  auto* show =
      command->add_subcommand("show", "Print one bench run with its config and parameters");
  show->add_option("id", options->show_id, "Run id (the ID column of `artune results`)")
      ->required();
  // Accepted before or after `show`: both set the same flag.
  show->add_flag("--json", options->json, "Print the run as one JSON object");

  show->callback(
      [options, &context] { RunCommand(context, [&] { return Show(*options, context); }); });
  command->callback([options, show, &context] {
    if (show->parsed()) return;  // the subcommand did the work
    RunCommand(context, [&] { return List(*options, context); });
  });
}

}  // namespace artune::cli
