#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace artune::cli {
namespace {

// Columns of the terminal behind `out`, 80 when it cannot be asked.
size_t TerminalColumns(std::FILE* out) {
  winsize size{};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// The longest prefix of `text` that takes at most `columns` columns, counting one
// column per UTF-8 code point and never cutting one in half.
std::string_view FitColumns(std::string_view text, size_t columns) {
  size_t used = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool starts_code_point = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_code_point) {
      if (used == columns) return text.substr(0, i);
      ++used;
    }
  }
  return text;
}

}  // namespace

ProgressLine::ProgressLine(const Context& context)
    : ProgressLine(ProgressOptions{.draw = ShowProgress(context),
                                   .verbose = context.globals.verbose && !context.globals.quiet},
                   stderr) {}

ProgressLine::ProgressLine(ProgressOptions options, std::FILE* out)
    : options_(options), out_(out) {}

ProgressLine::~ProgressLine() { Clear(); }

void ProgressLine::Update(std::string_view text) {
  if (!options_.draw) return;
  std::lock_guard lock(mutex_);
  text_.assign(text);
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && now - last_draw_ < options_.min_interval) return;
  last_draw_ = now;
  DrawLocked();
}

void ProgressLine::Detail(std::string_view line) {
  if (!options_.verbose) return;
  std::lock_guard lock(mutex_);
  const bool was_shown = shown_;
  ClearLocked();
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fputc('\n', out_);
  if (was_shown) DrawLocked();
  std::fflush(out_);
}

void ProgressLine::Clear() {
  std::lock_guard lock(mutex_);
  ClearLocked();
}

void ProgressLine::DrawLocked() {
  // Leave the last column free: writing into it makes some terminals wrap.
  const size_t columns = TerminalColumns(out_);
  const std::string_view fitted = FitColumns(text_, columns > 1 ? columns - 1 : columns);
  // \r to the line start, the text, then erase whatever an older, longer text left.
  std::fputc('\r', out_);
  std::fwrite(fitted.data(), 1, fitted.size(), out_);
  std::fputs("\033[K", out_);
  std::fflush(out_);
  shown_ = true;
}

void ProgressLine::ClearLocked() {
  if (!shown_) return;
  std::fputs("\r\033[K", out_);
  std::fflush(out_);
  shown_ = false;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  char buffer[32];
  if (seconds < 10) {
    std::snprintf(buffer, sizeof buffer, "%.1fs", seconds);
  } else if (seconds < 60) {
    std::snprintf(buffer, sizeof buffer, "%.0fs", seconds);
  } else if (seconds < 3600) {
    const long total = std::lround(seconds);
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", total / 60, total % 60);
  } else {
    const long minutes = std::lround(seconds / 60);
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", minutes / 60, minutes % 60);
  }
  return buffer;
}

std::string ProgressBar(double fraction, int width) {
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  width = std::max(width, 1);
  const int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] ";
  bar += std::to_string(static_cast<int>(std::lround(fraction * 100))) + "%";
  return bar;
}

}  // namespace artune::cli
