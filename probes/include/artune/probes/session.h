// A ProbeSession is the EventSink that turns a backend's events into a Profile:
// flows are paired into connections, each connection gets an HTTP/2 decoder, and
// every gRPC message and I/O call is classified.
//
// Usage: ProbeSession session(options); backend->Run(session, stop);
//        Profile p = session.Finish(backend->counters(), elapsed_seconds);
// Not thread-safe: called on the backend's run thread only. Bounded: at most
// `max_connections` tracked connections (more are counted in "connections_dropped"
// of the profile's backend_detail and ignored).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "artune/probes/backend.h"
#include "artune/probes/event.h"
#include "artune/probes/http2_decoder.h"
#include "artune/probes/profile.h"

namespace artune::probes {

struct SessionOptions {
  // The server's port when known (the capture's --port): decides request and
  // response when the stream itself does not (joined midway). Otherwise the side
  // with the lower port is taken as the server.
  std::optional<uint16_t> server_port;
  size_t max_connections = 4096;
  DecoderLimits decoder_limits;
  // Attribute send iovecs to the gRPC method whose frames they carried
  // (MethodProfile::iovec_sizes; the rest in Profile::unattributed_iovec_sizes).
  // For the syscall backends (ebpf with --decode, preload with bytes); costs a few
  // bounded queues per connection direction.
  bool attribute_iovecs = false;
  // Called for every decoded message after classification (tests, tracing); may be empty.
  std::function<void(const GrpcMessage&)> on_message;
};

class ProbeSession : public EventSink, private GrpcMessageObserver {
 public:
  explicit ProbeSession(SessionOptions options = {});
  ~ProbeSession() override;

  void OnFlowOpen(const FlowKey& flow, FlowOrigin origin, uint64_t timestamp_ns) override;
  void OnStreamBytes(const StreamSegment& segment) override;
  void OnStreamGap(const FlowKey& flow, uint64_t missing_bytes, uint64_t timestamp_ns) override;
  void OnFlowClose(const FlowKey& flow, FlowEnd end, uint64_t timestamp_ns) override;
  void OnIoCall(const IoCallEvent& event) override;

  uint64_t messages() const { return messages_; }
  const DecodeErrorCounts& errors() const { return errors_; }

  // Builds the profile; call once, after the run.
  Profile Finish(const std::string& backend_name, const BackendCounters& counters,
                 double duration_s);

 private:
  struct Connection;
  void OnGrpcMessage(const GrpcMessage& message) override;
  void OnFrame(const FrameSpan& span) override;
  void OnCallEnd(const CallEnd& end) override;
  // The index of (method, direction) in attributed_methods_; -1 for no method.
  int MethodIndex(std::string_view method, MessageDirection direction);
  void DecideIovec(int method_index, uint32_t length);
  // The connection of `flow` and the flow's side in it (0: flow.source is the lower
  // endpoint); null when the connection table is full.
  Connection* Lookup(const FlowKey& flow, int& side);
  // Ends both sides of `connection` and adds its facts to the profile.
  void RecordConnection(Connection& connection);

  SessionOptions options_;
  DecodeErrorCounts errors_;
  ProfileBuilder builder_;
  std::map<FlowKey, std::unique_ptr<Connection>> connections_;  // key: lower -> higher
  uint64_t next_connection_id_ = 1;
  uint64_t messages_ = 0;
  uint64_t connections_dropped_ = 0;
  uint64_t connections_seen_ = 0;
  // Iovec attribution: connection id -> connection, and the methods seen in frames.
  std::map<uint64_t, Connection*> connections_by_id_;
  std::map<std::string, int, std::less<>> method_indexes_[2];  // by MessageDirection
  std::vector<std::pair<std::string, MessageDirection>> attributed_methods_;
};

}  // namespace artune::probes
