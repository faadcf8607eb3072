// Where artune finds the helper libraries it preloads into other programs
// (libartune_preload.so for `artune probe --exec`, libartune_relay_redirect.so for
// `artune run`): one search order for both, so installs and build trees work alike,
// and one way to hand a library to the program.
#pragma once

#include <string>
#include <vector>

#include "artune/status.h"

namespace artune {

struct HelperLibrary {
  std::string file_name;    // "libartune_preload.so"
  std::string environment;  // the variable that names it: "ARTUNE_PRELOAD_LIBRARY"
  std::string target;       // the CMake target that builds it, for the error
  std::string build_path;   // this build tree's copy; empty: none
};

// With `explicit_path` set, that path alone; else the first readable of: the path in
// $environment, next to the running executable, <prefix>/lib/artune/ beside it, then
// build_path. Returns it made absolute. Errors: kNotFound naming every path tried,
// the target and the variable.
Result<std::string> FindHelperLibrary(const HelperLibrary& library,
                                      const std::string& explicit_path = "");

// This process's environment for a program to run with `library` preloaded: the
// library first in LD_PRELOAD (so it wraps libc, not the user's preloads, which
// follow it) and `variable`=`value` (any earlier value of it dropped), as
// "NAME=VALUE" strings for posix_spawn's envp.
std::vector<std::string> EnvironmentWithPreload(const std::string& library,
                                                const std::string& variable,
                                                const std::string& value);

}  // namespace artune
