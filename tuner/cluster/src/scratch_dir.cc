#include "artune/cluster/scratch_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace artune::cluster {
namespace {

constexpr const char* kOwnerFile = "owner";

// This process's pid namespace ("pid:[4026531836]"): a pid means something only
// inside its own namespace (a container on the same host name sharing /tmp may
// have its own), so only directories made in this namespace are judged.
std::string PidNamespace() {
  std::error_code error;
  const auto target = std::filesystem::read_symlink("/proc/self/ns/pid", error);
  return error ? std::string("unknown") : target.string();
}

// Whether `dir` is a scratch directory of this user that a gone process of `host`
// left behind.
bool IsStale(const std::filesystem::path& dir, const std::string& host) {
  struct stat info {};
  if (lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid()) {
    return false;
  }
  std::ifstream owner(dir / kOwnerFile);
  std::string owner_host, owner_namespace;
  long pid = 0;
  if (!(owner >> owner_host >> pid >> owner_namespace) || owner_host != host || pid <= 0 ||
      owner_namespace != PidNamespace()) {
    return false;
  }
  // ESRCH: no such process. EPERM means it lives (as another user).
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

int ScratchDir::RemoveStale(const std::string& base, const std::string& host) {
  std::error_code error;
  std::filesystem::directory_iterator entries(base, error);
  if (error) return 0;
  int removed = 0;
  // Bounded: one pass over the directory's entries.
  for (const auto& entry : entries) {
    if (!entry.path().filename().string().starts_with(kPrefix)) continue;
    if (!IsStale(entry.path(), host)) continue;
    std::error_code ignored;
    if (std::filesystem::remove_all(entry.path(), ignored) > 0) ++removed;
  }
  return removed;
}

Result<ScratchDir> ScratchDir::Make() {
  const char* base = std::getenv("TMPDIR");
  return MakeIn(base != nullptr && *base != '\0' ? base : "/tmp", Hostname());
}

Result<ScratchDir> ScratchDir::MakeIn(const std::string& base, const std::string& host) {
  RemoveStale(base, host);
  std::string pattern = base + "/" + kPrefix + "XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IoError("cannot create a scratch directory like " + pattern +
                           " (set TMPDIR to a writable directory)");
  }
  ScratchDir dir(pattern);
  std::ofstream owner(pattern + "/" + kOwnerFile);
  owner << host << ' ' << getpid() << ' ' << PidNamespace() << '\n';
  if (!owner.flush()) {
    return Status::IoError("cannot write " + pattern + "/" + kOwnerFile +
                           " (set TMPDIR to a writable directory)");
  }
  return dir;
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

}  // namespace artune::cluster
