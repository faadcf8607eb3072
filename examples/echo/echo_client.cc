// Echo client: sends each word to an echo server and checks that it comes back.
// Usage: echo_client HOST:PORT WORD...
#include <cstdio>
#include <span>
#include <string>

#include <artune/transport/config_loader.h>
#include <artune/transport/transport.h>

namespace at = artune::transport;

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: echo_client HOST:PORT WORD...\n"), 2;
  artune::Result<at::LoadedConfig> config = at::LoadConfig({});
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 2;
  // The handshake agrees on the config (the server's values win for both ends).
  artune::Result<std::unique_ptr<at::Client>> client = at::Client::Connect(config->config, argv[1]);
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;

  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    const at::ConstSlice request[] = {std::as_bytes(std::span(word))};
    artune::Result<at::Message> reply = (*client)->Call("/echo/Echo", request);
    if (!reply.ok()) return std::fprintf(stderr, "%s\n", reply.status().ToString().c_str()), 1;
    // A reply may arrive in several slices: join them.
    std::string echoed;
    for (at::ConstSlice slice : reply->slices()) {
      echoed.append(reinterpret_cast<const char*>(slice.data()), slice.size());
    }
    if (echoed != word) {
      return std::fprintf(stderr, "sent '%s', got '%s' back\n", word.c_str(), echoed.c_str()), 3;
    }
    std::printf("echo: %s\n", echoed.c_str());
  }
  return 0;
}
