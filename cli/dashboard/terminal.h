// The thin ncurses layer: owns the terminal while the dashboard runs, shows a
// Canvas, reads keys. Everything it draws comes from views.h.
//
// Terminal hygiene, on every path:
// * StdioRedirect moves fds 0/1/2 away from the terminal (to a log file) for the
//   dashboard's lifetime, so a --exec command, gRPC logging or a stray message
//   cannot scribble over the screen; ncurses talks to duplicates of the original
//   fds. Its destructor puts 0/1/2 back.
// * Terminal's destructor calls endwin(); it runs on q, on errors (RAII) and after
//   SIGINT/SIGTERM/SIGHUP, which only set a flag (StopSignalReceived) that the
//   loop checks at least every 100 ms.
// * Colour only when has_colors() and NO_COLOR is unset (https://no-color.org);
//   otherwise bold/reverse/dim attributes.
//
// Threading: UI thread only. One Terminal at a time (ncurses is global).
#pragma once

#include <csignal>
#include <memory>
#include <string>

#include "artune/status.h"
#include "canvas.h"
#include "views.h"

namespace artune::dashboard {

class StdioRedirect {
 public:
  // Sends 0 to /dev/null and 1, 2 to `log_path` (appended; created if missing).
  // Errors: kInvalidArgument when stdin or stdout is not a terminal (the
  // dashboard needs one), kIoError when the log cannot be opened.
  static Result<std::unique_ptr<StdioRedirect>> Start(const std::string& log_path);
  ~StdioRedirect();
  StdioRedirect(const StdioRedirect&) = delete;
  StdioRedirect& operator=(const StdioRedirect&) = delete;

  int terminal_input() const { return saved_[0]; }
  int terminal_output() const { return saved_[1]; }

 private:
  StdioRedirect() = default;
  int saved_[3] = {-1, -1, -1};
};

// Installs handlers for SIGINT, SIGTERM and SIGHUP that only record the signal;
// the previous handlers come back on destruction.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
  // The signal received since construction, or 0.
  static int received();

 private:
  struct sigaction previous_[3]{};
};

class Terminal {
 public:
  // Starts ncurses on the given terminal fds (cbreak, no echo, keypad, hidden
  // cursor). `want_colour`: false forces monochrome (NO_COLOR is checked too).
  // Errors: kUnavailable when the terminal type is unknown (TERM).
  static Result<std::unique_ptr<Terminal>> Open(int input_fd, int output_fd, bool want_colour);
  ~Terminal();  // endwin
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int width() const;
  int height() const;
  bool colour() const { return colour_; }

  // Waits up to `timeout_ms` for a key. `resized` is set on KEY_RESIZE.
  Key ReadKey(int timeout_ms, bool& resized);
  // Replaces the screen with `canvas` in one update (erase, draw, wnoutrefresh,
  // doupdate: only changed cells reach the terminal, so no flicker).
  void Present(const Canvas& canvas);

 private:
  Terminal() = default;
  int AttributesOf(Style style) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool colour_ = false;
};

}  // namespace artune::dashboard
