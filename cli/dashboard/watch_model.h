// The watch view's model: one stored `artune watch` decision turned into the
// lines the view shows (the config change it made or weighed, the predicted and
// the measured saving, the reason). Pure functions; the view draws them and
// tests/dashboard checks them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "artune/db/store.h"
#include "canvas.h"

namespace artune::dashboard {

struct WatchEventLine {
  int64_t id = 0;
  std::string time;       // "11-27 16:40:12" (UTC, as stored)
  std::string servers;    // the watched control addresses
  std::string action;     // WatchActionName: "push", "roll_back", ...
  std::string change;     // "chunk_size 512KiB->1MiB"; "" when the event weighed no change
  std::string predicted;  // the change's predicted saving of the pass, "12.5%"; "-" if none
  std::string measured;   // its saving on the live A/B, "-3.1%" (slower); "-" if not measured
  std::string reason;
  Style action_style = Style::kNormal;
  Style measured_style = Style::kNormal;
};

// The knobs that differ between two TrialKnobKey texts, "name from->to" joined by
// ", " in name order; "" when they are equal. Keys that do not parse are shown
// whole ("FROM -> TO").
std::string DescribeKnobChange(std::string_view from_key, std::string_view to_key);

// How the watcher stores its A/B (tuner/watch/watcher.cc): `paired_median` is the
// first config's time over the second's. After a prediction the first is the
// config in force and the second the candidate; at a re-check (the window after a
// push, reason "re-check: ...") the first is the config before the push and the
// second the pushed one, now in force, and a roll-back's candidate is the one
// before. The measured saving is always that of the change shown (or, for a
// re-check that kept the pushed config, of the push), so its sign reads the same
// on every row: positive, the new config was faster.
WatchEventLine DescribeWatchEvent(const db::WatchEventRecord& event);

}  // namespace artune::dashboard
