// Launching a program under the connect() interposer, for `artune run`: where the
// interposer library is, and the program run with it preloaded, pointed at a relay's
// control socket.
#pragma once

#include <string>
#include <vector>

#include "artune/status.h"

namespace artune::relay {

// The interposer (libartune_relay_redirect.so), the first readable of: the path in
// $ARTUNE_RELAY_REDIRECT_LIBRARY, next to the running executable, <prefix>/lib/artune/
// beside it, then this build tree's. Errors: kNotFound naming every path tried.
Result<std::string> FindRedirectLibrary();

// Runs `command` (argv; searched in $PATH) with `library` first in LD_PRELOAD (an
// LD_PRELOAD already set follows it) and the control socket in kRedirectSocketEnv,
// and waits for it. SIGINT and SIGTERM go to the command while it runs (the handlers
// stay installed after). Returns its exit code, or 128 + the signal that ended it, as
// a shell does. Errors: kNotFound when it cannot be started; waiting's errno.
// One at a time per process.
Result<int> RunRedirected(const std::vector<std::string>& command, const std::string& library,
                          const std::string& socket_path);

}  // namespace artune::relay
