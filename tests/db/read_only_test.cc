// A store the reader may not write (another user's, a read-only mount) still reads:
// `artune results`, `captures` and `db info` must not need write access.
//
// The reader runs in a child process: as root it drops to nobody (root ignores file
// modes), otherwise the files are made read-only for this user.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "artune/db/store.h"
#include "migrations.h"
#include "store_internal.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

constexpr uid_t kNobody = 65534;

// A directory the unprivileged reader can enter but not write.
class SharedDir {
 public:
  SharedDir() : path_(dir_.path() + "/shared") {
    std::filesystem::create_directory(path_);
    chmod(dir_.path().c_str(), 0755);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Takes write access away: directory 0555, every file in it 0444.
  void MakeReadOnly() const {
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      chmod(entry.path().c_str(), 0444);
    }
    chmod(path_.c_str(), 0555);
  }
  ~SharedDir() { chmod(path_.c_str(), 0755); }

 private:
  TempDir dir_;
  std::string path_;
};

// Runs `check` in a child that cannot write the shared directory; returns the
// child's exit code (0 when every check passed; the child prints what failed).
int RunAsReader(const std::function<int()>& check) {
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    if (geteuid() == 0 && (setgid(kNobody) != 0 || setuid(kNobody) != 0)) _exit(90);
    _exit(check());
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int Fail(const char* what, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.message().c_str());
  return 1;
}

TEST(ReadOnlyStore, ReadsWithoutCreatingFiles) {
  SharedDir dir;
  const std::string path = dir.File("artune.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(7)).ok());
  }  // the last connection closing removes -wal and -shm
  dir.MakeReadOnly();
  ASSERT_FALSE(std::filesystem::exists(path + "-shm"));

  EXPECT_EQ(RunAsReader([&] {
              auto store = Store::Open(path, OpenMode::kExisting);
              if (!store.ok()) return Fail("open", store.status());
              auto runs = (*store)->ListBenchRuns(10);
              if (!runs.ok()) return Fail("list", runs.status());
              if (runs->size() != 1 || runs->front().parameters.at("sequence") != "7") return 2;
              if ((*store)->InsertBenchRun(SampleRun(8)).ok()) return 3;  // must be refused
              auto info = (*store)->Info();
              if (!info.ok()) return Fail("info", info.status());
              return 0;
            }),
            0);
  EXPECT_FALSE(std::filesystem::exists(path + "-shm")) << "a reader left files behind";
}

TEST(ReadOnlyStore, ReadsWhileAWriterHoldsIt) {
  SharedDir dir;
  const std::string path = dir.File("artune.db");
  auto writer = Store::Open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE((*writer)->InsertBenchRun(SampleRun(1)).ok());
  ASSERT_TRUE((*writer)->InsertBenchRun(SampleRun(2)).ok());  // committed, maybe only in -wal
  chmod(dir.File("artune.db").c_str(), 0644);
  chmod((path + "-wal").c_str(), 0644);
  chmod((path + "-shm").c_str(), 0644);

  EXPECT_EQ(RunAsReader([&] {
              auto store = Store::Open(path, OpenMode::kExisting);
              if (!store.ok()) return Fail("open", store.status());
              auto runs = (*store)->ListBenchRuns(10);
              if (!runs.ok()) return Fail("list", runs.status());
              return runs->size() == 2 ? 0 : 2;
            }),
            0);
}

TEST(ReadOnlyStore, OlderSchemaSaysHowToMigrate) {
  SharedDir dir;
  const std::string path = dir.File("artune.db");
  const std::span<const Migration> all = BuiltinMigrations();
  ASSERT_GT(all.size(), 1u);
  {
    auto old_store = OpenWithMigrations(path, OpenMode::kCreate, all.first(all.size() - 1));
    ASSERT_TRUE(old_store.ok()) << old_store.status().message();
  }
  dir.MakeReadOnly();

  EXPECT_EQ(RunAsReader([&] {
              auto store = Store::Open(path, OpenMode::kExisting);
              if (store.ok()) return 2;
              if (store.status().code() != ErrorCode::kPermissionDenied) {
                return Fail("unexpected error", store.status());
              }
              const std::string message = store.status().message();  // status() is a copy
              return message.find("read-only") != std::string::npos &&
                             message.find("migrate") != std::string::npos
                         ? 0
                         : Fail("message", store.status());
            }),
            0);
}

// A command that measures looks before measuring (CheckWritable) and, when the
// store refuses writes, carries on in a copy in memory (CopyToMemory) whose ids go
// on from the file's; the file is not touched.
TEST(ReadOnlyStore, SaysItCannotBeWrittenAndCopiesIntoMemory) {
  SharedDir dir;
  const std::string path = dir.File("artune.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_TRUE((*store)->CheckWritable().ok()) << (*store)->CheckWritable().message();
    ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(1)).ok());
    ASSERT_TRUE((*store)->InsertBenchRun(SampleRun(2)).ok());
  }
  dir.MakeReadOnly();

  EXPECT_EQ(RunAsReader([&] {
              auto store = Store::Open(path, OpenMode::kExisting);
              if (!store.ok()) return Fail("open", store.status());
              const Status writable = (*store)->CheckWritable();
              if (writable.code() != ErrorCode::kPermissionDenied) return Fail("check", writable);
              if (writable.message().find("read-only") == std::string::npos) return 2;
              auto copy = (*store)->CopyToMemory();
              if (!copy.ok()) return Fail("copy", copy.status());
              if (!(*copy)->CheckWritable().ok())
                return Fail("copy check", (*copy)->CheckWritable());
              auto id = (*copy)->InsertBenchRun(SampleRun(3));
              if (!id.ok()) return Fail("insert into the copy", id.status());
              if (*id != 3) return 3;  // the file's ids go on
              auto runs = (*copy)->ListBenchRuns(0);
              if (!runs.ok() || runs->size() != 3) return 4;
              auto file_runs = (*store)->ListBenchRuns(0);
              if (!file_runs.ok() || file_runs->size() != 2) return 5;
              return 0;
            }),
            0);
}

TEST(InMemoryStore, StartsEmptyAtTheNewestSchema) {
  auto store = Store::OpenInMemory();
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto info = (*store)->Info();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->schema_version, static_cast<int>(BuiltinMigrations().size()));
  auto id = (*store)->InsertBenchRun(SampleRun(1));
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(*id, 1);
}

}  // namespace
}  // namespace artune::db
