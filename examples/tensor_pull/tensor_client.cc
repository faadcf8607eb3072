// Tensor client: pulls every tensor of tensors.h from a tensor server and checks
// each value.
// Usage: tensor_client HOST:PORT
#include <cstdio>
#include <cstring>
#include <span>

#include <artune/transport/config_loader.h>
#include <artune/transport/transport.h>

#include "tensors.h"

namespace at = artune::transport;

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: tensor_client HOST:PORT\n"), 2;
  artune::Result<at::LoadedConfig> config = at::LoadConfig({});
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 2;
  artune::Result<std::unique_ptr<at::Client>> client = at::Client::Connect(config->config, argv[1]);
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;

  for (size_t t = 0; t < std::size(kTensors); ++t) {
    const at::ConstSlice request[] = {std::as_bytes(std::span(kTensors[t].name))};
    artune::Result<at::Message> reply = (*client)->Call("/tensors/Pull", request);
    if (!reply.ok()) return std::fprintf(stderr, "%s\n", reply.status().ToString().c_str()), 1;
    // The reply's slices point into memory the Message owns: read them in place.
    size_t element = 0, mismatches = 0;
    for (at::ConstSlice slice : reply->slices()) {
      for (size_t offset = 0; offset + 4 <= slice.size(); offset += 4, ++element) {
        float value;
        std::memcpy(&value, slice.data() + offset, 4);
        if (value != TensorValue(t, element)) ++mismatches;
      }
    }
    const size_t bytes = reply->total_bytes();
    if (bytes != kTensors[t].elements * 4 || mismatches != 0) {
      std::fprintf(stderr, "%.*s: %zu bytes, %zu wrong values (expected %zu bytes)\n",
                   static_cast<int>(kTensors[t].name.size()), kTensors[t].name.data(), bytes,
                   mismatches, kTensors[t].elements * 4);
      return 3;
    }
    std::printf("%.*s: %zu floats ok\n", static_cast<int>(kTensors[t].name.size()),
                kTensors[t].name.data(), kTensors[t].elements);
  }
  std::printf("pulled %zu tensors\n", std::size(kTensors));
  return 0;
}
