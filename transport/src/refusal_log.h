// One rate limit for every "refused ..." line the transport writes to stderr
// (issue 26, 8: a peer refused 5000 times made 5000 lines in 0.2 s, drowning
// everything else and costing the server a write per refusal).
//
// At most kRefusalLinesPerSecond lines per second across the process; past that
// they are counted, and the next line written says how many were left out.
// Thread-safe; never blocks longer than one fprintf.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

namespace artune::transport {

inline constexpr uint32_t kRefusalLinesPerSecond = 10;

// The limiter itself, with its clock and sink injectable (tests); the process's
// one instance is behind LogRefusal.
class RateLimitedLog {
 public:
  using Clock = std::chrono::steady_clock;
  // `now` and `sink` default to the steady clock and "artune transport: LINE\n"
  // on stderr.
  explicit RateLimitedLog(uint32_t lines_per_second,
                          std::function<Clock::time_point()> now = nullptr,
                          std::function<void(const std::string&)> sink = nullptr);
  // Flushes the count of lines left out, if any.
  ~RateLimitedLog();

  // Writes `line` unless this second's lines are spent (then counts it). The first
  // line written after some were left out is preceded by "... N more refused".
  void Write(const std::string& line);

 private:
  void FlushSuppressedLocked();

  const uint32_t lines_per_second_;
  const std::function<Clock::time_point()> now_;
  const std::function<void(const std::string&)> sink_;
  std::mutex mutex_;
  Clock::time_point window_start_{};
  uint32_t written_in_window_ = 0;
  uint64_t suppressed_ = 0;
};

// Logs one refusal ("artune transport: LINE") through the process's limiter.
void LogRefusal(const std::string& line);

}  // namespace artune::transport
