// Adaptive polling's state in this process, for benchmarks that must tell which
// mode it was in (issue 26). On a host with no core to spare its waiters stop
// spinning and sleep as event polling does for a back-off period (20 ms, doubling
// up to 1 s while the host stays busy; transport/src/fabric/spin_governor.h).
//
// Threading: callable from any thread.
#pragma once

#include <cstdint>

namespace artune::transport {

// Counts since the process began: back-offs started, and the time spent backed off
// up to now.
struct AdaptiveBackOffs {
  uint64_t back_offs = 0;
  uint64_t backed_off_ns = 0;
};
AdaptiveBackOffs ProcessAdaptiveBackOffs();

}  // namespace artune::transport
