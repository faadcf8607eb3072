// TCP stream reassembly per direction: turns captured segments into the in-order,
// duplicate-free StreamSegment events of event.h. Internal to probes/pcap (the
// fuzz target and tests use it directly).
//
// Handles: out-of-order segments (held until the hole fills, bounded per flow),
// retransmissions and overlaps (the first copy of each byte wins), flows joined
// midway (first payload seen sets the origin), FIN/RST cleanup, sequence wrap. When
// the held bytes of a flow exceed the bound, or the capture ends with holes, the
// hole is reported with OnStreamGap and delivery continues after it.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "artune/probes/event.h"
#include "pcap/packet_parser.h"

namespace artune::probes::pcap {

struct ReassemblyLimits {
  size_t max_held_bytes_per_flow = 4 << 20;
  size_t max_flows = 65536;
};

struct ReassemblyCounters {
  uint64_t segments = 0;
  uint64_t delivered_bytes = 0;
  uint64_t out_of_order_segments = 0;
  uint64_t retransmitted_bytes = 0;  // wholly duplicate payload
  uint64_t overlapping_bytes = 0;    // partly duplicate payload, trimmed
  uint64_t gaps = 0;
  uint64_t gap_bytes = 0;
  uint64_t flows = 0;
  uint64_t flows_dropped = 0;  // over max_flows
};

class TcpReassembler {
 public:
  TcpReassembler(EventSink& sink, const ReassemblyLimits& limits = {});

  void OnPacket(const TcpPacket& packet, uint64_t timestamp_ns);
  // Ends every open flow: holes become gaps, then OnFlowClose(kCaptureStop).
  void Finish(uint64_t timestamp_ns);

  const ReassemblyCounters& counters() const { return counters_; }

 private:
  struct Flow {
    bool open = false;
    bool finished = false;       // closed by FIN/RST: later segments are stale copies
    uint32_t base_sequence = 0;  // sequence number of stream offset 0
    uint64_t next_offset = 0;    // next byte expected
    std::map<uint64_t, std::vector<uint8_t>> held;  // out of order, by stream offset
    size_t held_bytes = 0;
    bool fin_seen = false;
    uint64_t fin_offset = 0;
  };

  Flow* FindOrCreate(const FlowKey& key);
  void Open(const FlowKey& key, Flow& flow, uint32_t base, FlowOrigin origin, uint64_t ts);
  void Deliver(const FlowKey& key, Flow& flow, std::span<const uint8_t> bytes, uint64_t ts);
  void Accept(const FlowKey& key, Flow& flow, uint64_t offset, std::span<const uint8_t> bytes,
              uint64_t ts);
  void DrainHeld(const FlowKey& key, Flow& flow, uint64_t ts);
  void SkipToHeld(const FlowKey& key, Flow& flow, uint64_t ts);
  void Close(const FlowKey& key, Flow& flow, FlowEnd end, uint64_t ts);

  EventSink& sink_;
  ReassemblyLimits limits_;
  ReassemblyCounters counters_;
  std::map<FlowKey, Flow> flows_;
};

}  // namespace artune::probes::pcap
