// `artune watch`: keeps a running application's transport tuned. Window by window
// it reads the message-size profile of the traffic the application's relays (or an
// `artune serve`) carry from their counters; when the profile drifts from the one
// the config in force was chosen for, it predicts the best config of a search space
// for the new profile from a link model (model/predict.h), measures the prediction
// against the config in force with a paired A/B over the live link, and pushes it
// only when it measured faster beyond noise. After a change the next window
// re-checks it against the config before, and rolls back one measured slower. The
// guard rails are watch_policy.h's; every decision is a db::WatchEventRecord with
// its evidence.
//
// Threading: a Watcher is used from one thread; Step blocks while it measures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/model/link_model.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/transport/transport.h"
#include "artune/tuner/paired_compare.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/workload.h"
#include "artune/watch/traffic_profile.h"
#include "artune/watch/watch_policy.h"

namespace artune::watch {

// What the watcher reads from and does to the world. LiveLink is the real one; a
// test drives the watcher through a fake.
class WatchedLink {
 public:
  virtual ~WatchedLink() = default;
  // The counters of every watched server, added up.
  virtual Result<transport::Stats> ReadCounters() = 0;
  // The config the watched servers run (the first one's; a push sets them all alike).
  virtual Result<transport::Config> ConfigInForce() = 0;
  // Sets the live knobs of `config` on every watched server (LiveLink reaches them
  // all first: one it cannot reach fails the push before any server is changed).
  virtual Status Push(const transport::Config& config) = 0;
  // The paired A/B over the live link: `baseline` against `tuned` replaying `workload`.
  virtual Result<tuner::PairedCompareResult> Compare(const transport::Config& baseline,
                                                     const transport::Config& tuned,
                                                     const tuner::Workload& workload) = 0;
};

struct LiveLinkOptions {
  std::vector<std::string> servers;  // control addresses (host:port) of relays or serve
  std::string ab_peer;               // `artune serve` at the far end of the same link
  uint32_t ab_repeats = 6;           // pairs of the A/B
  double ab_duration_s = 0.3;        // per measurement
  uint32_t inflight = 8;             // calls in flight of the A/B's replay
};

// Talks to the servers over their control plane (GetStats, handshake, Reconfigure)
// with the token of CredentialsFromEnvironment, and measures with
// tuner::RunPairedCompare at `ab_peer`. kInvalidArgument without servers or peer.
Result<std::unique_ptr<WatchedLink>> OpenLiveLink(const LiveLinkOptions& options);

struct WatcherOptions {
  WatchPolicy policy;
  tuner::SearchSpace space;
  uint32_t replay_messages = 32;  // of the workload built from a window's profile
  double inflight = 8;            // calls in flight the prediction costs
  bool dry_run = false;           // decide, measure and store; never push
  std::string servers_text;       // for the records: the watched addresses
};

class Watcher {
 public:
  Watcher(WatchedLink& link, model::LinkModel model, WatcherOptions options);

  // Reads the counters and adds what they grew by to the window. Once the window
  // holds policy.min_window_messages it is judged (and a new window starts): the
  // decision, when one was made, is returned (a window whose profile has not
  // drifted makes none). Errors: the link's, when it cannot be read, pushed to or
  // measured over; the prediction's.
  Result<std::optional<db::WatchEventRecord>> Step(WatchClock::time_point now);

  const TrafficProfile& window() const { return window_; }
  size_t changes() const { return changes_.changes(); }

 private:
  Result<db::WatchEventRecord> Judge(WatchClock::time_point now);
  Result<db::WatchEventRecord> Recheck(WatchClock::time_point now);
  Result<db::WatchEventRecord> PredictAndConfirm(WatchClock::time_point now, double drift);
  db::WatchEventRecord EventOf(db::WatchAction action, std::string reason, double drift,
                               const transport::Config& in_force) const;
  std::string KnobKeyOf(const transport::Config& config) const;

  WatchedLink& link_;
  model::LinkModel model_;
  WatcherOptions options_;
  std::optional<transport::Stats> last_reading_;
  TrafficProfile window_;
  std::optional<TrafficProfile> reference_;  // the profile the config in force was chosen for
  // After a push: the config before it, until the next window re-checks the change.
  std::optional<transport::Config> before_change_;
  ChangeLog changes_;
};

// The watch itself: a Step every interval until the duration has passed or `wait`
// says to stop. A step that fails (a relay restarting, the A/B peer gone) is reported
// through `on_error` and the next interval tries again; `max_failed_steps` failures
// in a row end the watch with the last error.
struct WatchLoop {
  double interval_s = 5;
  double duration_s = 0;  // 0: until `wait` returns false
  uint32_t max_failed_steps = 3;
  // Waits up to `seconds`; false when the watch should stop (a signal).
  std::function<bool(double seconds)> wait;
  // Each decision (to store and print); an error ends the watch.
  std::function<Status(const db::WatchEventRecord&)> on_event;
  std::function<void(const Status&)> on_error;
};
Status RunWatchLoop(Watcher& watcher, const WatchLoop& loop);

}  // namespace artune::watch
