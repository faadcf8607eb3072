#include "fabric/spin_governor.h"

#include "artune/transport/adaptive_polling.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace artune::transport::fabric {

SpinGovernor& SpinGovernor::Process() {
  static SpinGovernor governor;
  return governor;
}

namespace {

// The CPUs this process may run on (its affinity mask: a container's or a job's
// cpuset, not the machine's).
int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

// What ProcessAdaptiveBackOffs reports, kept beside the process's governor (its
// header is included by every fabric; this is read by benchmarks only): the summed
// lengths of every back-off period started, and where the last one ends. Periods
// never overlap (a loss during one starts none), so the time backed off up to
// `now` is their sum less what of the last lies after `now`.
std::atomic<SpinGovernor::Clock::rep> backed_off_total{0};
std::atomic<SpinGovernor::Clock::rep> last_period_end{0};

void NoteBackOff(SpinGovernor::Clock::rep at, SpinGovernor::Clock::rep period) {
  last_period_end.store(at + period, std::memory_order_relaxed);
  backed_off_total.fetch_add(period, std::memory_order_relaxed);
}

}  // namespace

bool SpinGovernor::HostIsOversubscribed() {
  static const int cpus = UsableCpus();
  // "0.52 0.58 0.59 3/321 12345": the fourth field's first number counts the
  // threads running or runnable right now, the reader among them.
  const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[128];
  const ssize_t length = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (length <= 0) return false;
  text[length] = '\0';
  const char* field = text;
  for (int spaces = 0; spaces < 3 && field != nullptr; ++spaces) {
    field = std::strchr(field, ' ');
    if (field != nullptr) ++field;
  }
  if (field == nullptr) return false;
  const long runnable = std::strtol(field, nullptr, 10);
  return runnable - 1 >= cpus;
}

void SpinGovernor::LostCpu(Clock::time_point now) {
  const Clock::rep at = now.time_since_epoch().count();
  Clock::rep resume = resume_at_.load(std::memory_order_relaxed);
  // Another spinner of the process already reported this spell.
  if (at < resume) return;
  const Clock::rep shortest = std::chrono::duration_cast<Clock::duration>(kMinBackOff).count();
  const Clock::rep longest = std::chrono::duration_cast<Clock::duration>(kMaxBackOff).count();
  const Clock::rep previous = back_off_.load(std::memory_order_relaxed);
  // Lost again within one period of the last one's end: the host is still busy,
  // so wait longer before the next try; later than that, start over.
  const bool still_busy = previous > 0 && at - resume <= previous;
  const Clock::rep period = still_busy ? std::min(previous * 2, longest) : shortest;
  if (!resume_at_.compare_exchange_strong(resume, at + period, std::memory_order_relaxed)) return;
  back_off_.store(period, std::memory_order_relaxed);
  back_offs_.fetch_add(1, std::memory_order_relaxed);
  if (this == &Process()) NoteBackOff(at, period);
}

namespace {
std::atomic<uint64_t> idle_yields{0};
}  // namespace

bool IdleYield::HostHasRoom() {
  return SpinGovernor::Process().MaySpin(SpinGovernor::Clock::now());
}

void IdleYield::YieldCore() {
  idle_yields.fetch_add(1, std::memory_order_relaxed);
  ::sched_yield();
}

uint64_t IdleYields() { return idle_yields.load(std::memory_order_relaxed); }

void SpinGovernor::ResetForTesting() {
  sampled_at_.store(0, std::memory_order_relaxed);
  busy_samples_.store(0, std::memory_order_relaxed);
  resume_at_.store(0, std::memory_order_relaxed);
  back_off_.store(0, std::memory_order_relaxed);
  if (this == &Process()) {
    backed_off_total.store(0, std::memory_order_relaxed);
    last_period_end.store(0, std::memory_order_relaxed);
  }
}

}  // namespace artune::transport::fabric

namespace artune::transport {

AdaptiveBackOffs ProcessAdaptiveBackOffs() {
  using Clock = fabric::SpinGovernor::Clock;
  const Clock::rep now = Clock::now().time_since_epoch().count();
  const Clock::rep still_to_come =
      std::max<Clock::rep>(0, fabric::last_period_end.load(std::memory_order_relaxed) - now);
  const Clock::duration backed_off(std::max<Clock::rep>(
      0, fabric::backed_off_total.load(std::memory_order_relaxed) - still_to_come));
  return {fabric::SpinGovernor::Process().back_offs(),
          static_cast<uint64_t>(std::chrono::nanoseconds(backed_off).count())};
}

}  // namespace artune::transport
