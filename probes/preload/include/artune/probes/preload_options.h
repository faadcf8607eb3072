// Options of the preload backend (probes/preload/): `artune probe --exec -- CMD`
// runs CMD with libartune_preload.so in LD_PRELOAD and reads what it records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace artune::probes {

struct PreloadOptions {
  // The command and its arguments; command[0] is looked up in PATH.
  std::vector<std::string> command;
  // Also copy the bytes each call transferred, so the HTTP/2 and gRPC decoders
  // run on them (OnStreamBytes).
  bool capture_bytes = true;
  // Bytes copied per call at most; the rest is reported as a gap.
  uint64_t capture_max_bytes_per_call = 16u << 20;
  // Data bytes of the shared ring (a power of two, at least 64 KiB).
  uint64_t ring_bytes = 64u << 20;
  // libartune_preload.so to inject; empty: $ARTUNE_PRELOAD_LIBRARY, then next to
  // the artune executable, then <exe dir>/../lib/artune/, then the build tree.
  std::string library_path;
  // On a stop request or --duration, the command gets SIGTERM, then SIGKILL after
  // this long if it has not exited.
  uint32_t terminate_grace_ms = 5000;
  // The command's stdout goes to our stderr (`probe --exec --json`: stdout is the
  // JSON alone).
  bool command_stdout_to_stderr = false;
  // Off (default): the command runs in its own process group under a keeper
  // process, and the group is ended with the probe, even when the probe is killed
  // with SIGKILL. On: nothing ties it to the probe; a stop (--duration, Ctrl-C)
  // ends the capture and leaves the command running.
  bool command_outlives_probe = false;
};

}  // namespace artune::probes
