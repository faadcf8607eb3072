// Polls a running transport server's control plane (Control.GetStats in
// transport/proto/control.proto) and feeds a TransportModel. Only the stats RPC is
// used: no handshake, no fabric connection, so watching a server changes nothing
// on it.
//
// Lifecycle: Start() spawns the polling thread (the first poll runs at once);
// Stop() (or the destructor) wakes it and joins. Failed polls (server not up yet,
// gone) are shown in the model and retried at the next interval.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "artune/status.h"
#include "transport_model.h"

namespace artune::dashboard {

// One GetStats call with a deadline. Errors: kUnavailable (no server at the
// address, or it did not answer in time; the message names the address).
Result<TransportSample> FetchTransportStats(const std::string& address,
                                            std::chrono::milliseconds deadline);

class TransportSource {
 public:
  // `model` must outlive the source.
  static std::unique_ptr<TransportSource> Start(std::string address,
                                                std::chrono::milliseconds interval,
                                                TransportModel& model);
  ~TransportSource();
  TransportSource(const TransportSource&) = delete;
  TransportSource& operator=(const TransportSource&) = delete;
  void Stop();

 private:
  TransportSource(std::string address, std::chrono::milliseconds interval, TransportModel& model);
  void Run();

  std::string address_;
  std::chrono::milliseconds interval_;
  TransportModel& model_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace artune::dashboard
