// The main of the test binaries: GoogleTest's, plus a watchdog. CTest kills a test
// that outlives its TIMEOUT with SIGKILL, which leaves nothing to read but the
// test's name (and loses its buffered output). A test that runs longer than
// ARTUNE_TEST_WATCHDOG_SECONDS (set by tests/CMakeLists.txt a little below the
// CTest timeout) gets every thread's stack printed by gdb, then aborts: a rare
// hang seen once in CI can be read from the log instead of guessed at.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

// When the running test started (ticks of Clock), 0 between tests.
std::atomic<int64_t> test_started{0};
// Its name, for the report (written before test_started is set).
char test_name[512];

class WatchdogListener : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    std::snprintf(test_name, sizeof(test_name), "%s.%s", info.test_suite_name(), info.name());
    test_started.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    test_started.store(0, std::memory_order_release);
  }
};

// Prints every thread's stack with gdb (bounded by timeout(1): gdb may hang too).
void PrintStacks() {
  const std::string pid = std::to_string(::getpid());
  // Under Yama's ptrace_scope 1 only an ancestor may attach, and gdb is our child.
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execlp("timeout", "timeout", "60", "gdb", "-batch", "-nx", "-p", pid.c_str(), "-ex",
             "thread apply all bt", static_cast<char*>(nullptr));
    std::fprintf(stderr, "watchdog: cannot run gdb (apt-get install gdb) to print the stacks\n");
    ::_exit(127);
  }
  if (child > 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
  }
}

void Watch(std::chrono::seconds limit) {
  while (true) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const int64_t started = test_started.load(std::memory_order_acquire);
    if (started == 0) continue;
    const Clock::duration running = Clock::now().time_since_epoch() - Clock::duration(started);
    if (running < limit) continue;
    std::fflush(stdout);
    std::fprintf(
        stderr,
        "\nwatchdog: %s has run %lld s (limit %lld s, ARTUNE_TEST_WATCHDOG_SECONDS); "
        "the stacks of its threads:\n",
        test_name,
        static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(running).count()),
        static_cast<long long>(limit.count()));
    PrintStacks();
    std::abort();
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* limit = std::getenv("ARTUNE_TEST_WATCHDOG_SECONDS");
  const long seconds = limit != nullptr ? std::strtol(limit, nullptr, 10) : 0;
  if (seconds > 0) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new WatchdogListener);
    std::thread(Watch, std::chrono::seconds(seconds)).detach();
  }
  return RUN_ALL_TESTS();
}
