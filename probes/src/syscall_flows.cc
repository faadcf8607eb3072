#include "syscall_flows.h"

#include <string>

namespace artune::probes {

bool SyscallFlows::OpenOnce(EventSink& sink, const FlowKey& flow, FlowOrigin origin,
                            uint64_t timestamp_ns) {
  if (open_.count(flow) > 0) return true;
  if (ended_.count(flow) > 0) return false;
  // A socket the peer has disconnected reads back with port 0 (the kernel clears
  // it): its last calls (reads of 0 bytes, errors) are not a new connection.
  if (flow.source.port == 0 || flow.destination.port == 0) return false;
  open_.insert(flow);
  sink.OnFlowOpen(flow, origin, timestamp_ns);
  return true;
}

void SyscallFlows::OpenFromHandshake(EventSink& sink, const FlowKey& flow, uint64_t timestamp_ns) {
  if (open_.count(flow) > 0) return;
  ended_.erase(flow);
  stream_owner_is_sender_.erase(flow);
  open_.insert(flow);
  sink.OnFlowOpen(flow, FlowOrigin::kHandshake, timestamp_ns);
}

void SyscallFlows::Close(EventSink& sink, const FlowKey& flow, bool closing_sends, FlowEnd end,
                         uint64_t timestamp_ns) {
  const auto owner = stream_owner_is_sender_.find(flow);
  const bool owns =
      owner == stream_owner_is_sender_.end() ? closing_sends : owner->second == closing_sends;
  if (!owns) return;
  if (open_.erase(flow) == 0) return;
  if (ended_.size() >= kMaxEndedFlows) ended_.clear();
  ended_.insert(flow);
  sink.OnFlowClose(flow, end, timestamp_ns);
}

void SyscallFlows::CloseAll(EventSink& sink, uint64_t timestamp_ns) {
  for (const FlowKey& flow : open_) sink.OnFlowClose(flow, FlowEnd::kCaptureStop, timestamp_ns);
  open_.clear();
}

bool SyscallFlows::OwnsStream(const FlowKey& flow, bool from_sender, uint64_t bytes,
                              BackendCounters& counters) {
  const auto [owner, inserted] = stream_owner_is_sender_.emplace(flow, from_sender);
  if (owner->second == from_sender) return true;
  counters.detail["duplicate_stream_bytes_skipped"] += bytes;
  return false;
}

void SyscallFlows::DeliverCall(EventSink& sink, const IoCallEvent& event, bool flow_opened,
                               bool from_sender, uint64_t bytes_dropped, uint64_t gap_ns,
                               BackendCounters& counters) {
  if (flow_opened && bytes_dropped > 0 &&
      OwnsStream(event.flow, from_sender, bytes_dropped, counters)) {
    sink.OnStreamGap(event.flow, bytes_dropped, gap_ns);
    counters.detail["decode_bytes_dropped"] += bytes_dropped;
  }
  sink.OnIoCall(event);
  ++counters.events_seen;
  if (event.result > 0) counters.bytes_seen += static_cast<uint64_t>(event.result);
  ++counters.detail[std::string("calls_") + IoSyscallName(event.syscall)];
}

}  // namespace artune::probes
