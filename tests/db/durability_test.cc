// A killed writer and a concurrent reader never expose half a run.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "artune/db/store.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

// Enough rows per run that the kill often lands inside a transaction.
constexpr int kKnobsPerRun = 120;

// Checks that a run read back is exactly what SampleRun(sequence, kKnobsPerRun)
// wrote, and returns its sequence (or -1 after reporting a failure).
int CheckComplete(const BenchRun& run, int knobs) {
  auto sequence_entry = run.parameters.find("sequence");
  if (sequence_entry == run.parameters.end()) {
    ADD_FAILURE() << "run " << run.id << " has no sequence parameter: parameters incomplete";
    return -1;
  }
  const int sequence = std::stoi(sequence_entry->second);
  const BenchRun want = SampleRun(sequence, knobs);
  EXPECT_EQ(run.config.size(), static_cast<size_t>(knobs)) << "run " << run.id;
  EXPECT_EQ(run.config, want.config) << "run " << run.id;
  EXPECT_EQ(run.parameters, want.parameters) << "run " << run.id;
  EXPECT_EQ(run.rpcs, want.rpcs) << "run " << run.id;
  return sequence;
}

// The writer: inserts runs numbered from `first_sequence` and reports each commit
// by writing one byte to `ack_fd`. Never returns.
[[noreturn]] void InsertUntilKilled(const std::string& path, int first_sequence, int ack_fd) {
  auto store = Store::Open(path);
  if (!store.ok()) _exit(10);
  // Bounded: the parent kills long before this ends.
  for (int i = 0; i < 5000; ++i) {
    if (!(*store)->InsertBenchRun(SampleRun(first_sequence + i, kKnobsPerRun)).ok()) _exit(11);
    const char ack = 'c';
    if (write(ack_fd, &ack, 1) != 1) _exit(12);
  }
  _exit(0);
}

// Starts the writer in a fresh process: this test binary re-executed with only
// DurabilityHelper.InsertUntilKilled selected. A bare fork ran it in a copy of this
// process, which has the test main's watchdog thread; GCC 12's libasan does not
// lock its allocator around fork, so an allocator lock that thread held at the
// fork stayed held in the copy, and the writer's first malloc of that size waited
// forever (CI's sanitizer pass saw the writer stop; here, in round 0, its stack was in
// SizeClassAllocator64::GetFromAllocator). Everything is built before fork:
// between fork and exec only async-signal-safe calls.
pid_t SpawnWriter(const std::string& path, int first_sequence, const int pipe_fds[2]) {
  const std::string filter = "--gtest_filter=DurabilityHelper.InsertUntilKilled";
  const std::string variables[] = {
      "ARTUNE_DURABILITY_DB=" + path,
      "ARTUNE_DURABILITY_FIRST=" + std::to_string(first_sequence),
      "ARTUNE_DURABILITY_ACK_FD=" + std::to_string(pipe_fds[1]),
  };
  std::vector<char*> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.push_back(*entry);
  for (const std::string& variable : variables) {
    environment.push_back(const_cast<char*>(variable.c_str()));
  }
  environment.push_back(nullptr);
  char* const argv[] = {const_cast<char*>("db_tests"), const_cast<char*>(filter.c_str()), nullptr};
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    execve("/proc/self/exe", argv, environment.data());
    _exit(127);
  }
  return pid;
}

TEST(DurabilityHelper, InsertUntilKilled) {
  const char* path = std::getenv("ARTUNE_DURABILITY_DB");
  const char* first = std::getenv("ARTUNE_DURABILITY_FIRST");
  const char* ack_fd = std::getenv("ARTUNE_DURABILITY_ACK_FD");
  if (path == nullptr || first == nullptr || ack_fd == nullptr) {
    GTEST_SKIP() << "the writer process of KilledWriterLeavesOnlyWholeRuns only";
  }
  InsertUntilKilled(path, std::atoi(first), std::atoi(ack_fd));
}

// Waits for the next ack byte on `fd`; on timeout prints the stacks of `child`
// with gdb (bounded too) and returns false.
bool AckArrivesWithin(int fd, pid_t child, std::chrono::seconds limit) {
  pollfd readable{fd, POLLIN, 0};
  const int ready = poll(&readable, 1, static_cast<int>(limit.count() * 1000));
  if (ready != 0) return true;  // data, end of file or an error: read() says which
  const std::string command =
      "timeout 60 gdb -batch -nx -p " + std::to_string(child) + " -ex 'thread apply all bt' >&2";
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "(gdb could not print them)\n");
  return false;
}

TEST(Durability, KilledWriterLeavesOnlyWholeRuns) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);

  int committed_total = 0;  // acknowledged by children, so certainly committed
  int visible_total = 0;
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = SpawnWriter(path, visible_total, pipe_fds);
    ASSERT_GE(child, 0);
    close(pipe_fds[1]);

    // Kill after a random number of commits: the child is then somewhere inside
    // its next insert (opening, binding, mid-rows or committing).
    const int kill_after = std::uniform_int_distribution<int>(1, 40)(random);
    int acknowledged = 0;
    while (acknowledged < kill_after) {
      // Bounded: a child that stops committing fails the test with its stacks
      // (seen once in CI's sanitizer run: the read waited 270 s).
      if (!AckArrivesWithin(pipe_fds[0], child, std::chrono::seconds(60))) {
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
        FAIL() << "the writer made no commit in 60 s after " << acknowledged
               << " (its stacks are above)";
      }
      char ack;
      ssize_t got = read(pipe_fds[0], &ack, 1);
      if (got < 0 && errno == EINTR) continue;
      ASSERT_EQ(got, 1) << "child stopped before " << kill_after << " commits";
      ++acknowledged;
    }
    // A random extra delay spreads the kill over the whole insert rather than only
    // its first microseconds (this is where to kill, not a wait for anything).
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(random)));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int wait_status = 0;
    ASSERT_EQ(waitpid(child, &wait_status, 0), child);
    close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child exited with " << WEXITSTATUS(wait_status);
    committed_total += acknowledged;

    // Reopen as a new process would (WAL recovery) and look at everything.
    auto store = Store::Open(path, OpenMode::kExisting);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto runs = (*store)->ListBenchRuns(0);
    ASSERT_TRUE(runs.ok()) << runs.status().ToString();
    std::set<int> sequences;
    for (const BenchRun& run : *runs) sequences.insert(CheckComplete(run, kKnobsPerRun));
    ASSERT_EQ(sequences.size(), runs->size()) << "duplicate sequences";
    // Every acknowledged run survived; nothing beyond whole runs exists; and the runs
    // are exactly 0..n-1 (each child continued from the visible count).
    EXPECT_GE(static_cast<int>(runs->size()), committed_total);
    EXPECT_EQ(*sequences.begin(), 0);
    EXPECT_EQ(*sequences.rbegin(), static_cast<int>(runs->size()) - 1);
    auto info = (*store)->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->row_counts.at("bench_run_config"),
              static_cast<int64_t>(runs->size()) * kKnobsPerRun);
    EXPECT_EQ(info->row_counts.at("bench_run_parameters"), static_cast<int64_t>(runs->size()) * 2);
    visible_total = static_cast<int>(runs->size());
    // The dead writer left no lock behind.
    ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(visible_total, kKnobsPerRun)).ok());
    ++visible_total;
    committed_total = visible_total;
  }
}

TEST(Durability, ConcurrentReaderNeverSeesAPartialRun) {
  TempDir dir;
  const std::string path = dir.File("artune.db");
  {
    auto created = Store::Open(path);  // create before the threads race to
    ASSERT_TRUE(created.ok());
  }
  constexpr int kRuns = 300;
  constexpr int kKnobs = 30;
  std::atomic<bool> writer_done{false};
  Status writer_status;

  std::thread writer([&] {
    auto store = Store::Open(path);
    if (!store.ok()) {
      writer_status = store.status();
      writer_done = true;
      return;
    }
    for (int i = 0; i < kRuns && writer_status.ok(); ++i) {
      writer_status = (*store)->InsertBenchRun(SampleRun(i, kKnobs)).status();
    }
    writer_done = true;
  });

  auto reader = Store::Open(path, OpenMode::kExisting);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  size_t previous = 0;
  int reads = 0;
  bool last_pass = false;
  while (!last_pass) {
    last_pass = writer_done.load();  // one more read after the writer finished
    auto runs = (*reader)->ListBenchRuns(0);
    ASSERT_TRUE(runs.ok()) << runs.status().ToString();
    EXPECT_GE(runs->size(), previous) << "a committed run disappeared";
    previous = runs->size();
    for (const BenchRun& run : *runs) CheckComplete(run, kKnobs);
    ++reads;
  }
  writer.join();
  ASSERT_TRUE(writer_status.ok()) << writer_status.ToString();
  EXPECT_EQ(previous, static_cast<size_t>(kRuns));
  std::cout << "reader took " << reads << " snapshots while the writer inserted " << kRuns
            << " runs\n";
}

}  // namespace
}  // namespace artune::db
