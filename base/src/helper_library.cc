// Where artune finds its helper libraries (helper_library.h).
#include "artune/base/helper_library.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace artune {

Result<std::string> FindHelperLibrary(const HelperLibrary& library,
                                      const std::string& explicit_path) {
  std::vector<std::filesystem::path> candidates;
  if (!explicit_path.empty()) {
    candidates.emplace_back(explicit_path);
  } else {
    if (const char* path = std::getenv(library.environment.c_str());
        path != nullptr && path[0] != '\0') {
      candidates.emplace_back(path);
    }
    std::error_code error;
    const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error) {
      candidates.push_back(executable.parent_path() / library.file_name);
      candidates.push_back(executable.parent_path().parent_path() / "lib" / "artune" /
                           library.file_name);
    }
    if (!library.build_path.empty()) candidates.emplace_back(library.build_path);
  }
  std::string tried;
  for (const auto& candidate : candidates) {
    if (access(candidate.c_str(), R_OK) == 0) {
      std::error_code error;
      const auto absolute = std::filesystem::absolute(candidate, error);
      return error ? candidate.string() : absolute.string();
    }
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  return Status::NotFound(library.file_name + " not found (tried: " + tried + "): build the " +
                          library.target + " target, or point " + library.environment +
                          " at the library");
}

}  // namespace artune
