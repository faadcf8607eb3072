// artune watch: keeps a running application tuned (issue 25's closed loop). `watch
// run` reads the message-size profile of what its relays carry from their counters,
// predicts again when it drifts, confirms on the live link with a paired A/B against
// an `artune serve` at the far end and pushes only a config measured faster, with
// rate limits and a re-check that rolls back. `watch list` shows the stored
// decisions. Thin over artune/watch/watcher.h.
#include <signal.h>

#include <cmath>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "artune/base/time.h"
#include "artune/db/fallback_store.h"
#include "artune/model/link_model.h"
#include "artune/watch/watch_request.h"
#include "artune/watch/watcher.h"
#include "command.h"
#include "format.h"
#include "server_flags.h"
#include "stored_list.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

struct WatchFlags {
  watch::WatchRequest request;  // `watch run`
  int limit = 20;               // `watch list`
  bool json = false;
};

// Waits up to `seconds` for SIGINT or SIGTERM (blocked, so they queue): false once
// one came.
bool WaitUnlessStopped(const sigset_t& stop_signals, double seconds) {
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(seconds);
  timeout.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
  return sigtimedwait(&stop_signals, nullptr, &timeout) < 0;
}

Status Run(const WatchFlags& flags, Context& context) {
  ARTUNE_ASSIGN_OR_RETURN(const watch::WatcherOptions options,
                          watch::MakeWatcherOptions(flags.request));
  ARTUNE_ASSIGN_OR_RETURN(
      std::unique_ptr<db::FallbackStore> store,
      db::FallbackStore::Open(db::ResolveDatabasePath(context.globals.db_path), std::cerr));
  ARTUNE_ASSIGN_OR_RETURN(const db::LinkModelRecord model_record,
                          model::ChooseStoredModel(*store, flags.request.model_id));
  ARTUNE_ASSIGN_OR_RETURN(model::LinkModel link_model, model::FromRecord(model_record));
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<watch::WatchedLink> link,
                          watch::OpenLiveLink(flags.request.link));
  watch::Watcher watcher(*link, std::move(link_model), options);

  const sigset_t stop_signals = BlockStopSignals();
  if (!flags.json) {
    std::cerr << "artune watch: " << options.servers_text << ", A/B at "
              << flags.request.link.ab_peer << ", link model " << model_record.id
              << (flags.request.dry_run ? ", dry run" : "") << "; a decision once "
              << options.policy.min_window_messages
              << " messages have been carried (Ctrl-C stops)\n";
  }
  watch::WatchLoop loop;
  loop.interval_s = flags.request.interval_s;
  loop.duration_s = flags.request.duration_s;
  loop.wait = [&stop_signals](double seconds) { return WaitUnlessStopped(stop_signals, seconds); };
  loop.on_error = [](const Status& status) {
    std::cerr << "artune watch: " << status.ToString() << " (trying again next interval)\n";
  };
  loop.on_event = [&](const db::WatchEventRecord& decided) -> Status {
    db::WatchEventRecord event = decided;
    event.at = NowIso8601Utc();
    auto id = store->InsertWatchEvent(event);
    if (id.ok()) event.id = *id;
    if (flags.json) {
      ordered_json out = watch::WatchEventJson(event);
      out["stored"] = id.ok();
      std::cout << out.dump() << std::endl;
    } else {
      std::cout << "[" << (id.ok() ? "#" + std::to_string(*id) : std::string("not stored")) << "] "
                << db::WatchActionName(event.action) << ": " << event.reason << std::endl;
    }
    return Status::Ok();
  };
  const Status watched = watch::RunWatchLoop(watcher, loop);
  if (!flags.json) {
    std::cerr << "artune watch: stopped after " << watcher.changes() << " change"
              << (watcher.changes() == 1 ? "" : "s") << "\n";
  }
  ARTUNE_RETURN_IF_ERROR(watched);
  return store->NotStoredStatus("the decisions above were not stored");
}

Status List(const WatchFlags& flags, Context& context) {
  StoredListing<db::WatchEventRecord> listing{
      "watch_events",
      "watch_events",
      "watch",
      "watch decisions",
      "watch run",
      [](db::Store& store, int limit) { return store.ListWatchEvents(limit); },
      watch::WatchEventJson,
      {"ID", "AT", "ACTION", "DRIFT", "IN FORCE", "CANDIDATE", "A/B", "REASON"},
      {true, false, false, true, false, false, true, false},
      [](const db::WatchEventRecord& event) {
        return std::vector<std::string>{
            std::to_string(event.id),
            ShortTime(event.at),
            std::string(db::WatchActionName(event.action)),
            FormatNumber(event.drift, 2),
            event.in_force_knobs,
            event.candidate_knobs.empty() ? "-" : event.candidate_knobs,
            event.pairs == 0 ? "-" : FormatNumber(event.paired_median, 3) + "x",
            event.reason};
      },
      "`artune watch list --json` (every field)"};
  return PrintStoredListing(listing, flags.limit, flags.json, context);
}

void AddRunFlags(CLI::App& run, WatchFlags& flags) {
  run.add_option("--server", flags.request.link.servers,
                 "Control address of a relay (or `artune serve`) whose traffic is watched and "
                 "whose live knobs a decision pushes; repeatable (every relay of the job)")
      ->check(HostPortValidator())
      ->required();
  run.add_option("--ab-peer", flags.request.link.ab_peer,
                 "host:port of an `artune serve` at the far end of the watched link: a "
                 "predicted config is measured there against the one in force before a push")
      ->check(HostPortValidator())
      ->required();
  run.add_option("--link-model", flags.request.model_id,
                 "Stored link model of the watched link (`artune model list`); default: the "
                 "newest");
  run.add_option("--knob", flags.request.axes,
                 "A knob axis to search, as `artune sweep --knob`; repeatable. Default: "
                 "eager_threshold=256B..256KiB:x2 and chunk_size=16KiB..4MiB:x2");
  run.add_option("--interval", flags.request.interval_s, "Seconds between counter readings")
      ->capture_default_str();
  run.add_option("--duration", flags.request.duration_s,
                 "Stop after this many seconds (0: at Ctrl-C)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run.add_option("--window-messages", flags.request.policy.min_window_messages,
                 "Messages carried before a window is judged")
      ->capture_default_str();
  run.add_option("--drift", flags.request.policy.drift_threshold,
                 "Share of the bytes that must have moved between size buckets, against the "
                 "profile the config in force was chosen for, to predict again")
      ->capture_default_str();
  run.add_option("--min-margin", flags.request.policy.min_margin,
                 "Predicted saving of the in-force config's pass below which nothing is measured")
      ->capture_default_str();
  run.add_option("--min-gap", flags.request.min_gap_s, "Seconds at least between two changes")
      ->capture_default_str();
  run.add_option("--max-changes-per-hour", flags.request.policy.max_changes_per_hour,
                 "Changes (pushes and roll-backs) at most within any hour")
      ->capture_default_str();
  run.add_option("--ab-repeats", flags.request.link.ab_repeats,
                 "Pairs of the A/B (6 or more for a verdict beyond noise)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  run.add_option("--ab-duration", flags.request.link.ab_duration_s, "Seconds per A/B measurement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  run.add_option("--inflight", flags.request.link.inflight,
                 "Calls in flight of the A/B replay and of the prediction")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  run.add_option("--replay-messages", flags.request.replay_messages,
                 "Messages of the replay list built from a window's profile")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  run.add_flag("--dry-run", flags.request.dry_run,
               "Decide, measure and store, but never push (a decision to push is stored as "
               "hold)");
  run.add_flag("--json", flags.json, "One JSON object per decision, one per line");
}

}  // namespace

void RegisterWatch(CLI::App& root, Context& context) {
  CLI::App* watch_command = root.add_subcommand(
      "watch",
      "Keep a running application tuned: read the message sizes its relays carry, predict "
      "again when they drift (`artune predict`), confirm with a paired A/B on the live link "
      "and push only a config measured faster, with rate limits and roll-back; list the "
      "decisions");
  watch_command->require_subcommand(1);
  auto flags = std::make_shared<WatchFlags>();
  CLI::App* run = watch_command->add_subcommand(
      "run", "Watch the relays of a running `artune run` job until Ctrl-C or --duration");
  AddRunFlags(*run, *flags);
  run->footer(
      "Example (on a client host; the far host runs `artune relay` and `artune serve`):\n"
      "  artune model measure --peer far:50051\n"
      "  artune watch run --server 127.0.0.1:50061 --ab-peer far:50051");
  run->callback([flags, &context] { RunCommand(context, [&] { return Run(*flags, context); }); });

  CLI::App* list = watch_command->add_subcommand("list", "List the stored decisions, newest first");
  list->add_option("--limit", flags->limit, "Newest N decisions (0: all)")->capture_default_str();
  list->add_flag("--json", flags->json, "Print one JSON object");
  list->callback([flags, &context] { RunCommand(context, [&] { return List(*flags, context); }); });
}

}  // namespace artune::cli
