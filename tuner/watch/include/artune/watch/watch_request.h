// What `artune watch run` asks for, as its flags give it, made into the watcher's
// options; and a stored decision's JSON (`watch run --json`, `watch list --json`).
//
// Threading: pure functions over plain values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/watch/watch_policy.h"
#include "artune/watch/watcher.h"

namespace artune::watch {

struct WatchRequest {
  LiveLinkOptions link;
  WatchPolicy policy;             // min_gap is set from min_gap_s
  std::vector<std::string> axes;  // knob axes as `artune sweep --knob`; empty: the defaults
  int64_t model_id = 0;           // 0: the newest stored link model
  uint32_t replay_messages = 32;
  double interval_s = 5;   // between counter readings
  double duration_s = 0;   // 0: until stopped
  int64_t min_gap_s = 60;  // seconds at least between two changes
  bool dry_run = false;
};

// The policy (with min_gap), the search space, the replay size, the A/B's inflight
// and the watched servers' text. Errors, in this order: ValidateWatchPolicy's,
// kInvalidArgument for an interval not above 0, ParseSearchSpace's.
Result<WatcherOptions> MakeWatcherOptions(const WatchRequest& request);

// id, at, servers, action, reason, drift, window_messages, in_force, candidate,
// predicted_margin, paired {median, low, high, pairs, verdict}, profile (the stored
// profile object; {} when none was stored).
nlohmann::ordered_json WatchEventJson(const db::WatchEventRecord& event);

}  // namespace artune::watch
