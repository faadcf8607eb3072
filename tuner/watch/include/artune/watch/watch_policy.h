// The guard rails of `artune watch`: when a window of traffic is enough to judge,
// when its profile has drifted, when a predicted config is worth measuring, and how
// often the config of a running application may change. A config is pushed only
// when a paired A/B on the live link measured it faster beyond noise, and one that
// a re-check measures slower than the config before it is rolled back: the watcher
// never leaves in force a config it measured worse.
//
// Threading: a ChangeLog is used from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "artune/status.h"

namespace artune::watch {

struct WatchPolicy {
  // Messages a window needs before its profile is judged (fewer: keep reading).
  uint64_t min_window_messages = 200;
  // Drift (traffic_profile.h) from the reference profile at which to predict again.
  double drift_threshold = 0.25;
  // Predicted saving of the in-force config's pass below which nothing is measured.
  double min_margin = 0.05;
  // Changes (pushes and roll-backs) at least this far apart...
  std::chrono::seconds min_gap{60};
  // ...and at most this many within any hour.
  uint32_t max_changes_per_hour = 4;
};

// kInvalidArgument naming the flag for a threshold outside 0..1, a negative margin,
// zero window messages or zero changes per hour.
Status ValidateWatchPolicy(const WatchPolicy& policy);

using WatchClock = std::chrono::steady_clock;

// The changes made so far, for the rate limits.
class ChangeLog {
 public:
  void Record(WatchClock::time_point at);
  // Whether a change at `now` keeps within the policy; when not, `why` says which
  // limit and how long until it lifts.
  bool MayChange(const WatchPolicy& policy, WatchClock::time_point now, std::string* why) const;
  size_t changes() const { return total_; }

 private:
  std::deque<WatchClock::time_point> last_hour_;  // older ones pruned by Record
  size_t total_ = 0;
};

}  // namespace artune::watch
