// The tensors the server hands out and the client expects: names, element counts
// and a value pattern both sides compute (exact in float: below 2^24).
#pragma once

#include <cstddef>
#include <string_view>

struct TensorSpec {
  std::string_view name;
  size_t elements;
};

// 16 KiB, 256 KiB and 4 MiB of floats: sent eager, by rendezvous read and by
// chunked rendezvous under the transport's default thresholds.
inline constexpr TensorSpec kTensors[] = {
    {"embedding/bias", 4096},
    {"conv1/weights", 65536},
    {"fc/weights", 1048576},
};

inline float TensorValue(size_t tensor, size_t element) {
  return static_cast<float>((element * 7 + tensor * 1000) % 65536);
}
