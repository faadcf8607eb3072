// The CPU hogs of --background-load: they run (spinning, as child processes named
// artune-hog) until stopped, and none is left after Stop or the destructor.
#include "artune/tuner/background_load.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace artune::tuner {
namespace {

std::string Comm(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(file, comm);
  return comm;
}

// utime + stime of a process, in clock ticks (/proc/PID/stat fields 14 and 15).
long CpuTicks(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14) utime = std::stol(field);
    if (index == 15) {
      stime = std::stol(field);
      break;
    }
  }
  return utime + stime;
}

bool Gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

TEST(BackgroundLoad, ParsesCountsAndAll) {
  EXPECT_EQ(*ParseBackgroundLoad("0"), 0u);
  EXPECT_EQ(*ParseBackgroundLoad("3"), 3u);
  EXPECT_EQ(*ParseBackgroundLoad("all"), static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  for (const char* bad : {"", "-1", "2x", "1025", "many"}) {
    auto parsed = ParseBackgroundLoad(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("all"), std::string::npos);
  }
}

TEST(BackgroundLoad, HogsSpinUntilStoppedAndAreReaped) {
  auto load = BackgroundLoad::Start(2);
  ASSERT_TRUE(load.ok()) << load.status().message();
  ASSERT_EQ(load->hogs(), 2u);
  const std::vector<pid_t> pids = load->pids();
  for (const pid_t pid : pids) {
    // The name is set by the child: wait for it (bounded).
    for (int i = 0; i < 200 && Comm(pid) != "artune-hog"; ++i) usleep(10'000);
    EXPECT_EQ(Comm(pid), "artune-hog");
  }
  // Spinning: each one's CPU time goes up (waited for, not timed; at most 20 s).
  for (const pid_t pid : pids) {
    const long before = CpuTicks(pid);
    long after = before;
    for (int i = 0; i < 2000 && after <= before; ++i) {
      usleep(10'000);
      after = CpuTicks(pid);
    }
    EXPECT_GT(after, before) << "hog " << pid << " did not run";
  }
  load->Stop();
  EXPECT_EQ(load->hogs(), 0u);
  for (const pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << pid;  // killed and reaped
}

TEST(BackgroundLoad, TheDestructorStopsThem) {
  std::vector<pid_t> pids;
  {
    auto load = BackgroundLoad::Start(1);
    ASSERT_TRUE(load.ok()) << load.status().message();
    pids = load->pids();
    ASSERT_FALSE(Gone(pids.front()));
  }
  EXPECT_TRUE(Gone(pids.front()));
}

TEST(BackgroundLoad, NoneStartsNothing) {
  auto load = BackgroundLoad::Start(0);
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load->hogs(), 0u);
}

}  // namespace
}  // namespace artune::tuner
