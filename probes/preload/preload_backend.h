// The preload backend: runs a command with libartune_preload.so injected through
// LD_PRELOAD and reports every I/O call the command makes on a TCP socket as an
// IoCallEvent with its full iovec length list, and (PreloadOptions::capture_bytes)
// the transferred bytes as stream segments. Needs no privileges. Internal to
// probes/: reach it through CreateCaptureBackend().
//
// Start() creates the shared ring (shm_open), finds the library (kNotFound when it
// is nowhere) and starts the command (kNotFound when it cannot be executed).
// Run() reads the ring until the command exits, or until the stop condition holds
// (then the command gets SIGTERM, and SIGKILL after the grace period), drains it,
// and closes the flows still open with kCaptureStop. A flow whose connect()/accept()
// the library saw opens as kHandshake, else kMidStream; close() ends it with kFin.
//
// After Run(): command_exit_code() is the command's exit status (128 + signal
// number when a signal ended it), also in counters().detail["command_exit_code"].
#pragma once

#include <memory>

#include "artune/probes/backend.h"
#include "artune/probes/preload_options.h"

namespace artune::probes {

// Checks the options (kInvalidArgument: empty command, bad ring size).
Result<std::unique_ptr<CaptureBackend>> CreatePreloadBackend(const PreloadOptions& options);

// Where libartune_preload.so is, by the search order of PreloadOptions::library_path.
Result<std::string> FindPreloadLibrary(const std::string& explicit_path);

}  // namespace artune::probes
