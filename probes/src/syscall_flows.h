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
  // Returns false, announcing nothing, when the flow was closed by Close(): calls
  // that still arrive for it (the peer reading the last bytes after this side's
  // close(), when both ends are traced) belong to the ended connection, whose
  // bytes the caller must drop instead of opening a new, joined-midway one. Also
  // false for a flow with port 0 (a socket its peer has disconnected).
  bool OpenOnce(EventSink& sink, const FlowKey& flow, FlowOrigin origin, uint64_t timestamp_ns);
  // A connect() or accept() was seen for `flow`: opens it as kHandshake, also when
  // an earlier connection with the same addresses was closed (a reused 4-tuple is a
  // new connection with a new stream owner). Does nothing when it is already open.
  void OpenFromHandshake(EventSink& sink, const FlowKey& flow, uint64_t timestamp_ns);
  // A socket of `flow` was closed by the application: `closing_sends` when it is
  // the flow's sending end. The flow ends (and stays ended until
  // OpenFromHandshake()) only when that socket owns the flow's stream, or, with no
  // bytes seen yet, when it is the sender: with both ends traced, the other end's
  // records of the last bytes may still come after this close.
  void Close(EventSink& sink, const FlowKey& flow, bool closing_sends, FlowEnd end,
             uint64_t timestamp_ns);
  // Closes every flow still open at the end of the capture.
  void CloseAll(EventSink& sink, uint64_t timestamp_ns);
  // The side that delivers bytes first owns the flow's stream; the other side's copy
  // is skipped and counted in counters.detail["duplicate_stream_bytes_skipped"].
  bool OwnsStream(const FlowKey& flow, bool from_sender, uint64_t bytes, BackendCounters& counters);
  // What both backends do with one traced call once its event is built: when the
  // tracer dropped `bytes_dropped` of its bytes and this side owns the flow's stream,
  // a gap in the stream at `gap_ns`; then the event to the sink and the call into
  // counters (events_seen, bytes_seen, detail["calls_<syscall>"]). `flow_opened`
  // is what opening the event's flow answered; `from_sender` says whether the call
  // sends.
  void DeliverCall(EventSink& sink, const IoCallEvent& event, bool flow_opened, bool from_sender,
                   uint64_t bytes_dropped, uint64_t gap_ns, BackendCounters& counters);

 private:
  // Ended flows remembered at most this many; past it the oldest knowledge is
  // dropped (a late call on such a flow then opens a joined-midway connection).
  static constexpr size_t kMaxEndedFlows = 65536;

  std::set<FlowKey> open_;
  std::set<FlowKey> ended_;
  std::map<FlowKey, bool> stream_owner_is_sender_;
};

}  // namespace artune::probes
