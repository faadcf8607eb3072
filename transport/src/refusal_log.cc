// The process's limiter of refusal lines (refusal_log.h).
#include "refusal_log.h"

namespace artune::transport {

RateLimitedLog::RateLimitedLog(uint32_t lines_per_second, std::function<Clock::time_point()> now,
                               std::function<void(const std::string&)> sink)
    : lines_per_second_(lines_per_second),
      now_(now ? std::move(now) : [] { return Clock::now(); }),
      sink_(sink ? std::move(sink) : [](const std::string& line) {
        std::fprintf(stderr, "artune transport: %s\n", line.c_str());
      }) {}

RateLimitedLog::~RateLimitedLog() {
  std::lock_guard lock(mutex_);
  FlushSuppressedLocked();
}

void RateLimitedLog::Write(const std::string& line) {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = now_();
  if (now - window_start_ >= std::chrono::seconds(1)) {
    window_start_ = now;
    written_in_window_ = 0;
  }
  if (written_in_window_ >= lines_per_second_) {
    ++suppressed_;
    return;
  }
  ++written_in_window_;
  FlushSuppressedLocked();
  sink_(line);
}

void RateLimitedLog::FlushSuppressedLocked() {
  if (suppressed_ == 0) return;
  sink_("... " + std::to_string(suppressed_) + " more refused (at most " +
        std::to_string(lines_per_second_) + " lines a second are written)");
  suppressed_ = 0;
}

void LogRefusal(const std::string& line) {
  // Never destroyed: threads of a server may still refuse while the process exits.
  static auto* log = new RateLimitedLog(kRefusalLinesPerSecond);
  log->Write(line);
}

}  // namespace artune::transport
