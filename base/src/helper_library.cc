// Where artune finds its helper libraries (helper_library.h).
#include "artune/base/helper_library.h"

#include <unistd.h>

extern char** environ;

#include <cstdlib>
#include <filesystem>
#include <string_view>
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

std::vector<std::string> EnvironmentWithPreload(const std::string& library,
                                                const std::string& variable,
                                                const std::string& value) {
  std::vector<std::string> environment;
  std::string preload = library;
  const std::string replaced = variable + "=";
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view setting(*entry);
    if (setting.starts_with("LD_PRELOAD=")) {
      if (setting.size() > 11) preload += ":" + std::string(setting.substr(11));
    } else if (!setting.starts_with(replaced)) {
      environment.emplace_back(setting);
    }
  }
  environment.push_back("LD_PRELOAD=" + preload);
  environment.push_back(replaced + value);
  return environment;
}

}  // namespace artune
