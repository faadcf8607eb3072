// Echo server: answers every call to /echo/Echo with the request's own bytes.
// Usage: echo_server [HOST:PORT]   (default 127.0.0.1:0, a free port)
// Prints "listening on HOST:PORT" and serves until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <string>

#include <artune/transport/config_loader.h>
#include <artune/transport/transport.h>
#include <artune/transport/version.h>

namespace at = artune::transport;

int main(int argc, char** argv) {
  const std::string address = argc > 1 ? argv[1] : "127.0.0.1:0";
  // Block the stop signals before any transport thread starts, so that only
  // sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // Defaults, then the user's transport.toml and ARTUNE_* variables.
  artune::Result<at::LoadedConfig> config = at::LoadConfig({});
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 2;
  artune::Result<std::unique_ptr<at::Server>> server = at::Server::Start(config->config, address);
  if (!server.ok()) return std::fprintf(stderr, "%s\n", server.status().ToString().c_str()), 1;

  // Request slices stay valid until the handler returns: appended, they go back
  // without a copy. The handler never blocks, so it may run on the fabric's thread.
  (*server)->RegisterHandler(
      "/echo/Echo",
      [](const at::Message& request, at::ResponseWriter& response) {
        for (at::ConstSlice slice : request.slices()) response.Append(slice);
        return artune::Status::Ok();
      },
      at::HandlerOptions{.non_blocking = true});
  std::printf("artune transport %s: listening on %s\n", ARTUNE_TRANSPORT_VERSION_STRING,
              (*server)->address().c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  const at::Stats stats = (*server)->stats();
  (*server)->Shutdown();
  std::printf("served %llu calls\n", static_cast<unsigned long long>(stats.calls_completed));
  return 0;
}
