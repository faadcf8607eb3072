#include "fabric/random_keys.h"

#include <sys/random.h>
#include <sys/types.h>

#include <iterator>

namespace artune::transport::fabric {

uint32_t RandomKeys::Next() {
  for (;;) {
    if (used_ == std::size(batch_)) {
      // getrandom(2) of at most 256 bytes is never short once the kernel's pool is
      // initialised (it blocks until then); EINTR is the one error: try again.
      if (::getrandom(batch_, sizeof(batch_), 0) != static_cast<ssize_t>(sizeof(batch_))) continue;
      used_ = 0;
    }
    const uint32_t key = batch_[used_++];
    if (key != 0) return key;
  }
}

}  // namespace artune::transport::fabric
