// Names the calling thread, so `top -H`, /proc/PID/task/TID/comm, perf and gdb
// tell the transport's threads apart (every one would show the program's name).
#pragma once

#include <pthread.h>

namespace artune::transport {

// `name`: at most 15 characters (the kernel's limit); a longer one is not set.
inline void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }

}  // namespace artune::transport
