// The dashboard's screens, drawn into a Canvas from model snapshots, and the key
// handling that switches between them. No ncurses here: terminal.h shows the
// canvas, tests read it.
//
// Layout (every view): row 0 the title bar with the view tabs, the last row the
// key hints; the view's body in between. Below kMinWidth x kMinHeight the whole
// screen is a "terminal too small" notice.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "canvas.h"
#include "cluster_model.h"
#include "sweep_model.h"
#include "traffic_model.h"
#include "transport_model.h"

namespace artune::dashboard {

inline constexpr int kMinWidth = 80;
inline constexpr int kMinHeight = 24;

enum class View : uint8_t { kTraffic, kSweep, kTransport, kHome, kWatch };
const char* ViewName(View view);

// Keys as the views understand them; the terminal layer maps its key codes here.
enum class Key : uint8_t {
  kNone,
  kQuit,       // q, Q
  kHelp,       // ?
  kEscape,     // Esc: closes the help
  kTraffic,    // 1, t
  kSweep,      // 2, s
  kTransport,  // 3, x
  kHome,       // 4, Home
  kWatch,      // 5, w
  kNextView,   // Tab
  kUp,         // Up, k
  kDown,       // Down, j
  kOther,
};

struct UiState {
  View view = View::kTraffic;
  bool help = false;
  bool quit = false;
  size_t selected_method = 0;  // traffic view: the method whose histograms are shown
};

// Applies one key. `method_count` bounds the traffic selection.
void HandleKey(UiState& ui, Key key, size_t method_count);

// What the sweep view shows: a summary, or why there is none.
struct SweepPanel {
  bool configured = false;  // --sweep given (or a store to read)
  std::string source;       // "store /path/artune.db, sweep 3" (or "latest sweep")
  std::string error;        // reading failed, or no such sweep yet
  std::optional<SweepSummary> summary;
  // The cluster run whose link this sweep measured (nullopt: not a cluster's link).
  std::optional<ClusterPanel> cluster;
};

// What the home view shows: the store's newest records, so that `artune
// dashboard` with no flags opens on where things stand.
struct HomePanel {
  std::string store_path;
  std::string error;                          // the store could not be read, or does not exist yet
  std::map<std::string, int64_t> row_counts;  // table -> rows (StoreInfo)
  std::vector<db::SweepRecord> sweeps;        // newest first
  std::vector<db::CaptureRecord> captures;    // newest first
  std::vector<db::BenchRun> runs;             // newest first
  std::vector<ClusterLine> clusters;          // newest first
};

// What the watch view shows: `artune watch`'s stored decisions, newest first.
struct WatchPanel {
  std::string store_path;
  std::string error;                         // the store could not be read, or does not exist yet
  int64_t total = 0;                         // decisions in the store
  std::vector<db::WatchEventRecord> events;  // newest first
};

struct Frame {
  TrafficSnapshot traffic;
  TransportSnapshot transport;
  SweepPanel sweep;
  HomePanel home;
  WatchPanel watch;
};

// Draws the whole screen for `ui` (the help over the view when open).
void DrawScreen(const Frame& frame, const UiState& ui, Canvas& canvas);

// Parts, exposed for tests.
void DrawTrafficView(const TrafficSnapshot& traffic, size_t selected_method, Canvas& canvas);
void DrawSweepView(const SweepPanel& sweep, Canvas& canvas);
void DrawTransportView(const TransportSnapshot& transport, Canvas& canvas);
void DrawHomeView(const HomePanel& home, Canvas& canvas);
void DrawWatchView(const WatchPanel& watch, Canvas& canvas);
// The cluster panel in the box (top, left, width, height); returns false, drawing
// nothing, when the box is too small for it.
bool DrawClusterPanel(const ClusterPanel& panel, Canvas& canvas, int top, int left, int width,
                      int height);

// "123", "12.3 k", "4.5 M" (for counts and rates).
std::string FormatCount(double value);
// Short log2 bucket label: "0", "512", "4K", "16M", "2G".
std::string BucketLabel(uint64_t lower_bound);

}  // namespace artune::dashboard
