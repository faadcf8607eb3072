// A rank's scratch directory: removed when it ends, and, when a killed rank could
// not remove it, by the next rank of this user on this host that makes one.
#include "artune/cluster/scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "../temp_dir.h"

namespace artune::cluster {
namespace {

namespace fs = std::filesystem;

class ScratchDirTest : public ::testing::Test {
 protected:
  // A scratch directory as a rank killed before its destructor ran leaves it: made
  // by a child process that then exits without unwinding.
  std::string LeftByAGoneProcess(const std::string& host) {
    int pipe_fds[2];
    EXPECT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    if (child == 0) {
      auto dir = ScratchDir::MakeIn(base_, host);
      const std::string path = dir.ok() ? dir->path() : std::string();
      (void)!write(pipe_fds[1], path.data(), path.size());
      _exit(0);  // no destructors: the directory stays
    }
    close(pipe_fds[1]);
    char path[4096] = {};
    const ssize_t got = read(pipe_fds[0], path, sizeof path - 1);
    close(pipe_fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_GT(got, 0);
    return std::string(path, got > 0 ? static_cast<size_t>(got) : 0);
  }

  const test_support::TempDir temp_{"scratch-dir-test"};
  const std::string base_ = temp_.path();
};

TEST_F(ScratchDirTest, EndingRemovesTheDirectoryAndWhatIsInIt) {
  std::string path;
  {
    auto dir = ScratchDir::MakeIn(base_, "node0");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    path = dir->path();
    std::ofstream(path + "/scratch.db") << "rows";
    EXPECT_TRUE(fs::exists(path + "/scratch.db"));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(ScratchDirTest, ADirectoryOfAGoneProcessIsRemovedByTheNextMake) {
  const std::string left = LeftByAGoneProcess("node0");
  ASSERT_TRUE(fs::exists(left + "/owner")) << left;
  auto next = ScratchDir::MakeIn(base_, "node0");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_FALSE(fs::exists(left)) << "the killed rank's directory was left";
  EXPECT_TRUE(fs::exists(next->path()));
}

TEST_F(ScratchDirTest, LiveProcessesOtherHostsOtherNamespacesAndForeignDirectoriesAreKept) {
  auto live = ScratchDir::MakeIn(base_, "node0");  // this process: alive
  ASSERT_TRUE(live.ok());
  const std::string other_host = LeftByAGoneProcess("node1");
  const std::string unowned = base_ + "/" + ScratchDir::kPrefix + "older";
  fs::create_directory(unowned);  // no owner file: not ours to judge
  // A gone process of this host in another pid namespace (a container sharing
  // /tmp): its pid says nothing here.
  const std::string other_namespace = LeftByAGoneProcess("node0");
  std::string host, pid_namespace;
  long pid = 0;
  std::ifstream(other_namespace + "/owner") >> host >> pid >> pid_namespace;
  ASSERT_TRUE(pid_namespace.starts_with("pid:[")) << pid_namespace;
  std::ofstream(other_namespace + "/owner") << host << ' ' << pid << " pid:[1]\n";
  const std::string unrelated = base_ + "/someone-else";
  fs::create_directory(unrelated);

  EXPECT_EQ(ScratchDir::RemoveStale(base_, "node0"), 0);
  EXPECT_TRUE(fs::exists(live->path()));
  EXPECT_TRUE(fs::exists(other_host)) << "a directory of another host's process was removed";
  EXPECT_TRUE(fs::exists(unowned));
  EXPECT_TRUE(fs::exists(other_namespace)) << "a directory of another pid namespace was removed";
  EXPECT_TRUE(fs::exists(unrelated));
  EXPECT_EQ(ScratchDir::RemoveStale(base_, "node1"), 1);
  EXPECT_FALSE(fs::exists(other_host));
}

TEST_F(ScratchDirTest, AnUnwritableBaseSaysToSetTmpdir) {
  auto dir = ScratchDir::MakeIn(base_ + "/missing", "node0");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("TMPDIR"), std::string::npos) << dir.status().ToString();
}

}  // namespace
}  // namespace artune::cluster
