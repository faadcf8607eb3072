// Unguessable offer keys (fabric.h, Endpoint::Expose) for every fabric.
#pragma once

#include <cstddef>
#include <cstdint>

namespace artune::transport::fabric {

// Non-zero 32-bit values from the kernel's CSPRNG (getrandom), fetched in batches so
// a key costs no system call most of the time. Not thread-safe: each owner guards
// its own instance.
class RandomKeys {
 public:
  uint32_t Next();

 private:
  uint32_t batch_[64] = {};
  size_t used_ = 64;
};

}  // namespace artune::transport::fabric
