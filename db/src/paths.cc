// Where the store lives by default: the XDG base directory specification's data
// directory, overridable with $ARTUNE_DB.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "artune/db/store.h"

namespace artune::db {
namespace {

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

std::string HomeDirectory() {
  std::string home = EnvOrEmpty("HOME");
  if (!home.empty()) return home;
  // No $HOME (a service, a stripped environment): the password database knows.
  if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir != nullptr) {
    return entry->pw_dir;
  }
  return ".";
}

}  // namespace

std::string DefaultDatabasePath() {
  if (std::string explicit_path = EnvOrEmpty("ARTUNE_DB"); !explicit_path.empty()) {
    return explicit_path;
  }
  std::string data_home = EnvOrEmpty("XDG_DATA_HOME");
  // The specification says a relative XDG_DATA_HOME is invalid and must be ignored.
  if (data_home.empty() || data_home.front() != '/') {
    data_home = HomeDirectory() + "/.local/share";
  }
  return data_home + "/artune/artune.db";
}

std::string ResolveDatabasePath(const std::string& flag_value) {
  return flag_value.empty() ? DefaultDatabasePath() : flag_value;
}

}  // namespace artune::db
