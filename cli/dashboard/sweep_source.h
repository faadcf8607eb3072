// Reads a sweep (running or finished) from the SQLite store for the sweep view.
// The store is in WAL mode, so these reads never block the `artune sweep` that is
// writing it; each Poll() reads one consistent set of committed trials.
//
// Threading: UI thread only (a db::Store is used from one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/cluster/cluster_records.h"
#include "artune/db/store.h"
#include "artune/status.h"
#include "views.h"

namespace artune::dashboard {

// "latest" (the newest sweep, followed as new ones start) or a sweep id.
struct SweepSelector {
  std::optional<int64_t> id;  // nullopt: latest
};
// Parses "latest" or a positive id. kInvalidArgument otherwise.
Result<SweepSelector> ParseSweepSelector(const std::string& text);

// One axis of a sweep's stored search space ("NAME=LO..HI:xF" or "NAME=a,b,c",
// the canonical --knob syntax of `artune sweep`, read by tuner::ParseKnobAxis),
// values as knob text in ascending order. nullopt for text that parser refuses
// (the view then shows only measured values).
struct SearchAxis {
  std::string knob;
  std::vector<std::string> values;
};
std::optional<SearchAxis> ParseSearchAxis(std::string_view spec);

// The view's input from store records (exposed for tests).
SweepInput SweepInputFromRecords(const db::SweepRecord& sweep,
                                 const std::vector<db::TrialRecord>& trials);

class SweepSource {
 public:
  SweepSource(std::string database_path, SweepSelector selector);
  ~SweepSource();
  // Reads the store now. Never fails: a missing store or sweep becomes the
  // panel's error text, and the next Poll() tries again (a sweep that starts after
  // the dashboard shows up). For a sweep that measured a cluster's link, the panel
  // carries the cluster's heatmap (a cluster that cannot be read leaves it out).
  SweepPanel Poll();

 private:
  // The cluster panel for `sweep_id`, nullopt when the sweep is no cluster's link.
  // A link keeps its sweep, so a sweep's cluster is looked up until found and then
  // kept; the cluster is read again only when its links or its finish mark changed.
  std::optional<ClusterPanel> ClusterOf(int64_t sweep_id);
  // Whether cluster_ holds `cluster_id` as the store has it now.
  bool ClusterIsCurrent(int64_t cluster_id);

  std::string database_path_;
  SweepSelector selector_;
  std::unique_ptr<db::Store> store_;
  std::map<int64_t, int64_t> cluster_of_sweep_;
  struct ReadCluster {
    tuner::ClusterData data;
    tuner::ClusterAnalysis analysis;
  };
  std::optional<ReadCluster> cluster_;
};

}  // namespace artune::dashboard
