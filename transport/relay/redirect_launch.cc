// Launching a program under the connect() interposer (redirect_launch.h).
#include "redirect_launch.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "artune/base/helper_library.h"
#include "redirect_protocol.h"

namespace artune::relay {
namespace {

std::atomic<pid_t> child_pid{0};

// SIGINT/SIGTERM go to the command, which decides; artune run waits for it.
void ForwardSignal(int signal) {
  const pid_t pid = child_pid.load();
  if (pid > 0) kill(pid, signal);
}

}  // namespace

Result<std::string> FindRedirectLibrary() {
#ifdef ARTUNE_RELAY_REDIRECT_BUILD_PATH
  const char* build_path = ARTUNE_RELAY_REDIRECT_BUILD_PATH;
#else
  const char* build_path = "";
#endif
  return FindHelperLibrary({"libartune_relay_redirect.so", "ARTUNE_RELAY_REDIRECT_LIBRARY",
                            "artune_relay_redirect", build_path});
}

Result<int> RunRedirected(const std::vector<std::string>& command, const std::string& library,
                          const std::string& socket_path) {
  std::vector<std::string> environment =
      EnvironmentWithPreload(library, kRedirectSocketEnv, socket_path);
  std::vector<char*> argv, envp;
  for (const std::string& argument : command) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);

  struct sigaction forward {};
  forward.sa_handler = ForwardSignal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (error != 0) {
    return Status::NotFound("cannot run " + command[0] + ": " + std::strerror(error));
  }
  child_pid.store(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::FromErrno("waiting for " + command[0], errno);
  }
  child_pid.store(0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace artune::relay
