// A stated background load: CPU hogs that run beside a measurement, so that a
// sweep or a compare sees the busy host a training job runs on (every core taken
// by input pipelines and the framework) rather than an idle one. On an idle host a
// config can win that collapses on a busy one: busy polling takes a core per side
// (issue 26: in one process, 261 calls/s under one hog per core against 37 666).
//
// Each hog is a child process (named "artune-hog") spinning on the CPU at the
// caller's priority, in the caller's session, so its CPU time is not this
// process's (the CPU share `apply compare` reports stays the transport's) and the
// scheduler weighs it as any other busy process. No hog outlives its
// BackgroundLoad: Stop (or the destructor) kills and reaps them; if this process
// dies first (SIGTERM, SIGINT, SIGKILL, a crash) the kernel kills them
// (PR_SET_PDEATHSIG), and a hog that finds itself orphaned exits on its own.
//
// Threading: start and stop on one thread, which must outlive the load (the
// kernel's parent-death signal follows the thread that forked). The child does
// nothing but spin and make async-signal-safe system calls, so forking a process
// with running threads is safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "artune/status.h"

namespace artune::tuner {

// More hogs than this is a typo, not a load.
inline constexpr uint32_t kMaxBackgroundLoad = 1024;

// "all" (one hog per online core) or a count 0..kMaxBackgroundLoad.
// kInvalidArgument otherwise, saying what is accepted.
Result<uint32_t> ParseBackgroundLoad(std::string_view text);

class BackgroundLoad {
 public:
  // Starts `hogs` hogs (0: none, nothing forked). kIoError when fork fails (the
  // hogs started so far are stopped).
  static Result<BackgroundLoad> Start(uint32_t hogs);

  BackgroundLoad() = default;
  BackgroundLoad(BackgroundLoad&& other) noexcept;
  BackgroundLoad& operator=(BackgroundLoad&& other) noexcept;
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;
  ~BackgroundLoad() { Stop(); }

  // Kills (SIGKILL) and reaps every hog; idempotent.
  void Stop();
  uint32_t hogs() const { return static_cast<uint32_t>(pids_.size()); }
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace artune::tuner
