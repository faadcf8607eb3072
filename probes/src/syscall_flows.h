// Flow bookkeeping shared by the syscall-level backends (ebpf/, preload/): which
// flows have been announced to the sink, and — when both ends of a connection are
// in the traced process(es), so every byte is seen twice, once by the sender's call
// and once by the receiver's — which side's copy of a flow's bytes is the stream.
//
// Threading: used from the backend's run thread only.
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "artune/probes/backend.h"
#include "artune/probes/event.h"

namespace artune::probes {

class SyscallFlows {
 public:
  // Announces `flow` to the sink the first time it is seen; later calls do nothing.
  void OpenOnce(EventSink& sink, const FlowKey& flow, FlowOrigin origin, uint64_t timestamp_ns);
  // Closes `flow` if it is open (an fd closed by the application).
  void Close(EventSink& sink, const FlowKey& flow, FlowEnd end, uint64_t timestamp_ns);
  // Closes every flow still open at the end of the capture.
  void CloseAll(EventSink& sink, uint64_t timestamp_ns);
  // The side that delivers bytes first owns the flow's stream; the other side's copy
  // is skipped and counted in counters.detail["duplicate_stream_bytes_skipped"].
  bool OwnsStream(const FlowKey& flow, bool from_sender, uint64_t bytes, BackendCounters& counters);

 private:
  std::set<FlowKey> open_;
  std::map<FlowKey, bool> stream_owner_is_sender_;
};

}  // namespace artune::probes
