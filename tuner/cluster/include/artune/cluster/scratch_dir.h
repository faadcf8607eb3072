// A rank's private scratch directory (its scratch store and token file), under
// $TMPDIR or /tmp, removed with everything in it when the ScratchDir ends.
//
// A rank that is killed (mpirun's SIGTERM after another rank's MPI_Abort, a
// SIGKILL) never runs that destructor. So each directory names its owner (host,
// pid and pid namespace, in a file "owner"), and Make first removes this user's
// scratch directories whose owner was a process of this host and pid namespace
// that is gone. Directories of other hosts (a TMPDIR on a shared file system), of
// other pid namespaces (containers sharing /tmp) and of live processes are left
// alone; a recycled pid only keeps a stale directory a while longer.
#pragma once

#include <string>

#include "artune/status.h"

namespace artune::cluster {

class ScratchDir {
 public:
  // kIoError when the directory cannot be made, saying to set TMPDIR.
  static Result<ScratchDir> Make();
  // The same under `base`, naming `host` as the owner's host (tests).
  static Result<ScratchDir> MakeIn(const std::string& base, const std::string& host);

  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ~ScratchDir();
  const std::string& path() const { return path_; }

  // Removes the scratch directories under `base` owned by gone processes of `host`;
  // returns how many it removed.
  static int RemoveStale(const std::string& base, const std::string& host);

  static constexpr const char* kPrefix = "artune-mpi-";

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// gethostname(), or "unknown" when it fails.
std::string Hostname();

}  // namespace artune::cluster
