#include "syscall_flows.h"

namespace artune::probes {

void SyscallFlows::OpenOnce(EventSink& sink, const FlowKey& flow, FlowOrigin origin,
                            uint64_t timestamp_ns) {
  if (open_.insert(flow).second) sink.OnFlowOpen(flow, origin, timestamp_ns);
}

void SyscallFlows::Close(EventSink& sink, const FlowKey& flow, FlowEnd end, uint64_t timestamp_ns) {
  if (open_.erase(flow) > 0) sink.OnFlowClose(flow, end, timestamp_ns);
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

}  // namespace artune::probes
