// A live probe the dashboard runs itself: a capture backend (pcap, ebpf or
// preload, chosen by probes::BackendOptions exactly as `artune probe` does) on its
// own thread, its events decoded by a probes::ProbeSession and fed to a
// TrafficModel as they arrive.
//
// Lifecycle: Start() acquires the backend on the caller's thread (every "cannot
// start" error comes back from it, as probes' CaptureBackend::Start documents),
// then runs it on a thread of its own. Stop() (or the destructor) asks the
// backend to stop and joins; a --exec command gets SIGTERM then SIGKILL
// (PreloadOptions::terminate_grace_ms). The model's state tells the view whether
// the probe runs, finished (end of file, command exited) or failed.
//
// Threading: Start/Stop/command_exit_code on one (the UI) thread; the model is
// written from the probe thread.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "artune/probes/backend.h"
#include "artune/status.h"
#include "traffic_model.h"

namespace artune::dashboard {

// A one-line description of what a probe watches, for the view's header.
std::string DescribeProbe(const probes::BackendOptions& options);

class ProbeSource {
 public:
  // `model` must outlive the source. `server_port`: the gRPC server's port when
  // known (decides request vs. response on streams joined midway).
  static Result<std::unique_ptr<ProbeSource>> Start(const probes::BackendOptions& options,
                                                    std::optional<uint16_t> server_port,
                                                    TrafficModel& model);
  ~ProbeSource();
  ProbeSource(const ProbeSource&) = delete;
  ProbeSource& operator=(const ProbeSource&) = delete;

  void Stop();
  // The --exec command's exit status when it exited on its own (before Stop());
  // nullopt while it runs, or when Stop() ended it.
  std::optional<int> command_exit_code() const;

 private:
  ProbeSource(std::unique_ptr<probes::CaptureBackend> backend, std::optional<uint16_t> server_port,
              TrafficModel& model);
  void Run();

  std::unique_ptr<probes::CaptureBackend> backend_;
  std::optional<uint16_t> server_port_;
  TrafficModel& model_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> finished_{false};
  std::atomic<bool> ended_on_its_own_{false};
  std::thread thread_;
};

}  // namespace artune::dashboard
