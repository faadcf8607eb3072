// Progress of long work (bench, sweep, probe) on stderr, the way a good terminal
// tool does it: one status line redrawn in place while stderr is a terminal, and
// nothing at all when it is a pipe or a file or --quiet is given, so scripts and
// logs see only results. --verbose adds detail lines that stay (on a terminal or
// not; never with --quiet).
//
//   ProgressLine progress(context);
//   progress.Detail("server listening on 127.0.0.1:50051");  // --verbose only
//   for (...) progress.Update("trial 3/12 eager_threshold=4KiB, ETA " + FormatDuration(eta));
//   progress.Clear();  // before printing results
//   std::cout << table;
//
// Threading: every member may be called from any thread (a benchmark's progress
// callback runs on its worker); calls are serialized by an internal mutex.
// Lifetime: the destructor clears the line.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "command.h"

namespace artune::cli {

struct ProgressOptions {
  bool draw = false;     // redraw the status line (a terminal, not --quiet)
  bool verbose = false;  // print Detail lines (--verbose, not --quiet)
  // Redraws closer together than this are skipped (the newest text is kept and
  // shown at the next Update past the interval, or never if none comes).
  std::chrono::milliseconds min_interval{100};
};

class ProgressLine {
 public:
  // draw = ShowProgress(context) (stderr is a terminal and not --quiet);
  // verbose = --verbose and not --quiet; writes to stderr.
  explicit ProgressLine(const Context& context);
  // For tests and special cases: any options, any stream (not owned; must outlive
  // this object). The terminal width is asked of `out`'s descriptor.
  ProgressLine(ProgressOptions options, std::FILE* out);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Whether Update draws anything: callers skip building status text otherwise.
  bool drawing() const { return options_.draw; }
  bool verbose() const { return options_.verbose; }

  // Replaces the status line with `text` (cut to the terminal's width), at most
  // once per min_interval. No-op unless drawing().
  void Update(std::string_view text);
  // With --verbose: clears the status line, prints `line` and a newline (a line
  // that stays), and redraws the status line after it. No-op otherwise.
  void Detail(std::string_view line);
  // Erases the status line (call before printing normal output); the next Update
  // draws again immediately.
  void Clear();

 private:
  void DrawLocked();
  void ClearLocked();

  const ProgressOptions options_;
  std::FILE* const out_;
  std::mutex mutex_;
  std::string text_;    // the current status text
  bool shown_ = false;  // the status line is on screen
  std::chrono::steady_clock::time_point last_draw_{};
};

// "0.4s", "12s", "3m05s", "2h01m": for ETAs and elapsed times.
std::string FormatDuration(double seconds);
// "[#######.........] 45%" for a fraction in [0, 1] (clamped), `width` cells.
std::string ProgressBar(double fraction, int width = 20);

}  // namespace artune::cli
