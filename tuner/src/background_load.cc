#include "artune/tuner/background_load.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>
#include <utility>

namespace artune::tuner {
namespace {

// The child's whole life: only async-signal-safe calls (the parent may have
// threads holding locks the child would never see released).
[[noreturn]] void Spin(pid_t parent) {
  prctl(PR_SET_NAME, "artune-hog", 0, 0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // The parent may have died before the line above took effect.
  if (getppid() != parent) _exit(0);
  for (uint64_t spins = 1;; ++spins) {
    // Now and then, in case the parent-death signal was ever missed.
    if ((spins & ((uint64_t{1} << 24) - 1)) == 0 && getppid() != parent) _exit(0);
    asm volatile("" ::: "memory");  // keeps the loop from being optimised away
  }
}

}  // namespace

Result<uint32_t> ParseBackgroundLoad(std::string_view text) {
  if (text == "all") {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return static_cast<uint32_t>(cores > 0 ? cores : 1);
  }
  uint32_t hogs = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), hogs);
  if (error != std::errc() || end != text.data() + text.size() || hogs > kMaxBackgroundLoad) {
    return Status::InvalidArgument(
        "--background-load " + std::string(text) + ": give a number of CPU hogs (0.." +
        std::to_string(kMaxBackgroundLoad) + ") or `all` (one per online core)");
  }
  return hogs;
}

Result<BackgroundLoad> BackgroundLoad::Start(uint32_t hogs) {
  BackgroundLoad load;
  const pid_t parent = getpid();
  for (uint32_t i = 0; i < hogs; ++i) {
    const pid_t child = fork();
    if (child == 0) Spin(parent);
    if (child < 0) {
      const int error = errno;
      load.Stop();
      return Status::FromErrno("cannot start CPU hog " + std::to_string(i + 1) + " of " +
                                   std::to_string(hogs) + " (--background-load)",
                               error);
    }
    load.pids_.push_back(child);
  }
  return load;
}

BackgroundLoad::BackgroundLoad(BackgroundLoad&& other) noexcept
    : pids_(std::exchange(other.pids_, {})) {}

BackgroundLoad& BackgroundLoad::operator=(BackgroundLoad&& other) noexcept {
  if (this != &other) {
    Stop();
    pids_ = std::exchange(other.pids_, {});
  }
  return *this;
}

void BackgroundLoad::Stop() {
  for (const pid_t pid : pids_) kill(pid, SIGKILL);
  for (const pid_t pid : pids_) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pids_.clear();
}

}  // namespace artune::tuner
