// Tensor server: keeps a few tensors in registered memory (from the server's
// allocator) and hands them out zero-copy: the client reads them in place.
// Usage: tensor_server [HOST:PORT]   (default 127.0.0.1:0)
// Prints "listening on HOST:PORT" and serves until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <map>
#include <string>

#include <artune/transport/config_loader.h>
#include <artune/transport/transport.h>

#include "tensors.h"

namespace at = artune::transport;

int main(int argc, char** argv) {
  const std::string address = argc > 1 ? argv[1] : "127.0.0.1:0";
  sigset_t stop_signals;  // only sigwait below receives them
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  artune::Result<at::LoadedConfig> config = at::LoadConfig({});
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 2;
  artune::Result<std::unique_ptr<at::Server>> server = at::Server::Start(config->config, address);
  if (!server.ok()) return std::fprintf(stderr, "%s\n", server.status().ToString().c_str()), 1;

  // Registered buffers live as long as the server serves them.
  std::map<std::string, at::Buffer, std::less<>> tensors;
  for (size_t t = 0; t < std::size(kTensors); ++t) {
    artune::Result<at::Buffer> buffer = (*server)->allocator().Allocate(kTensors[t].elements * 4);
    if (!buffer.ok()) return std::fprintf(stderr, "%s\n", buffer.status().ToString().c_str()), 1;
    auto* values = reinterpret_cast<float*>(buffer->data());
    for (size_t i = 0; i < kTensors[t].elements; ++i) values[i] = TensorValue(t, i);
    tensors.emplace(kTensors[t].name, std::move(*buffer));
  }

  // Request: a tensor's name. Response: its bytes, straight from registered memory.
  (*server)->RegisterHandler(
      "/tensors/Pull",
      [&tensors](const at::Message& request, at::ResponseWriter& response) {
        std::string name;
        for (at::ConstSlice slice : request.slices()) {
          name.append(reinterpret_cast<const char*>(slice.data()), slice.size());
        }
        auto found = tensors.find(name);
        if (found == tensors.end()) return artune::Status::NotFound("no tensor named " + name);
        response.Append(at::ConstSlice(found->second.data(), found->second.size()));
        return artune::Status::Ok();
      },
      at::HandlerOptions{.non_blocking = true});
  std::printf("listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  const at::Stats stats = (*server)->stats();
  (*server)->Shutdown();
  std::printf("served %llu calls\n", static_cast<unsigned long long>(stats.calls_completed));
  return 0;
}
