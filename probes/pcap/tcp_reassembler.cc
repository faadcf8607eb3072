#include "pcap/tcp_reassembler.h"

#include <algorithm>

namespace artune::probes::pcap {
namespace {

// Segments farther ahead than this are not believed (corrupt or unrelated): with a
// 4 MiB hold bound nothing legitimate is held that far ahead anyway.
constexpr int64_t kMaxAhead = int64_t{1} << 30;

}  // namespace

TcpReassembler::TcpReassembler(EventSink& sink, const ReassemblyLimits& limits)
    : sink_(sink), limits_(limits) {}

TcpReassembler::Flow* TcpReassembler::FindOrCreate(const FlowKey& key) {
  auto it = flows_.find(key);
  if (it != flows_.end()) return &it->second;
  if (flows_.size() >= limits_.max_flows) {
    // Make room from flows that are already closed.
    for (auto c = flows_.begin(); c != flows_.end() && flows_.size() >= limits_.max_flows;) {
      c = c->second.open ? std::next(c) : flows_.erase(c);
    }
    if (flows_.size() >= limits_.max_flows) {
      ++counters_.flows_dropped;
      return nullptr;
    }
  }
  return &flows_[key];
}

void TcpReassembler::Open(const FlowKey& key, Flow& flow, uint32_t base, FlowOrigin origin,
                          uint64_t ts) {
  flow = Flow{};
  flow.open = true;
  flow.base_sequence = base;
  ++counters_.flows;
  sink_.OnFlowOpen(key, origin, ts);
}

void TcpReassembler::Deliver(const FlowKey& key, Flow& flow, std::span<const uint8_t> bytes,
                             uint64_t ts) {
  if (bytes.empty()) return;
  counters_.delivered_bytes += bytes.size();
  flow.next_offset += bytes.size();
  sink_.OnStreamBytes(StreamSegment{key, ts, bytes});
}

void TcpReassembler::DrainHeld(const FlowKey& key, Flow& flow, uint64_t ts) {
  while (!flow.held.empty() && flow.held.begin()->first <= flow.next_offset) {
    auto node = flow.held.extract(flow.held.begin());
    flow.held_bytes -= node.mapped().size();
    const uint64_t offset = node.key();
    const uint64_t end = offset + node.mapped().size();
    if (end <= flow.next_offset) {
      counters_.retransmitted_bytes += node.mapped().size();
      continue;
    }
    const size_t skip = static_cast<size_t>(flow.next_offset - offset);
    counters_.overlapping_bytes += skip;
    Deliver(key, flow, std::span<const uint8_t>(node.mapped()).subspan(skip), ts);
  }
}

void TcpReassembler::SkipToHeld(const FlowKey& key, Flow& flow, uint64_t ts) {
  if (flow.held.empty()) return;
  const uint64_t missing = flow.held.begin()->first - flow.next_offset;
  ++counters_.gaps;
  counters_.gap_bytes += missing;
  sink_.OnStreamGap(key, missing, ts);
  flow.next_offset = flow.held.begin()->first;
  DrainHeld(key, flow, ts);
}

void TcpReassembler::Accept(const FlowKey& key, Flow& flow, uint64_t offset,
                            std::span<const uint8_t> bytes, uint64_t ts) {
  const uint64_t end = offset + bytes.size();
  if (end <= flow.next_offset) {
    counters_.retransmitted_bytes += bytes.size();
    return;
  }
  if (offset < flow.next_offset) {
    const size_t skip = static_cast<size_t>(flow.next_offset - offset);
    counters_.overlapping_bytes += skip;
    bytes = bytes.subspan(skip);
    offset = flow.next_offset;
  }
  if (offset == flow.next_offset) {
    Deliver(key, flow, bytes, ts);
    DrainHeld(key, flow, ts);
    return;
  }
  ++counters_.out_of_order_segments;
  auto [it, inserted] = flow.held.try_emplace(offset);
  if (!inserted && it->second.size() >= bytes.size()) {
    counters_.retransmitted_bytes += bytes.size();
    return;
  }
  flow.held_bytes -= it->second.size();
  it->second.assign(bytes.begin(), bytes.end());
  flow.held_bytes += bytes.size();
  // Bounded holding: give up on the oldest hole rather than grow.
  while (flow.held_bytes > limits_.max_held_bytes_per_flow && !flow.held.empty()) {
    SkipToHeld(key, flow, ts);
  }
}

void TcpReassembler::Close(const FlowKey& key, Flow& flow, FlowEnd end, uint64_t ts) {
  while (!flow.held.empty()) SkipToHeld(key, flow, ts);
  flow.open = false;
  flow.finished = end != FlowEnd::kCaptureStop;
  flow.held.clear();
  flow.held_bytes = 0;
  sink_.OnFlowClose(key, end, ts);
}

void TcpReassembler::OnPacket(const TcpPacket& packet, uint64_t ts) {
  ++counters_.segments;
  const FlowKey& key = packet.flow;
  Flow* flow = FindOrCreate(key);
  if (flow == nullptr) return;

  if ((packet.flags & kTcpSyn) != 0) {
    // A new connection (or a reused 4-tuple): data starts after the SYN's number.
    const uint32_t base = packet.sequence + 1;
    if (flow->open && flow->base_sequence == base) return;  // retransmitted SYN
    if (flow->open) Close(key, *flow, FlowEnd::kReset, ts);
    Open(key, *flow, base, FlowOrigin::kHandshake, ts);
  }
  if ((packet.flags & kTcpRst) != 0) {
    if (flow->open) Close(key, *flow, FlowEnd::kReset, ts);
    auto reverse = flows_.find(key.Reversed());
    if (reverse != flows_.end() && reverse->second.open) {
      Close(reverse->first, reverse->second, FlowEnd::kReset, ts);
    }
    return;
  }
  const bool has_payload = !packet.payload.empty() || packet.payload_missing > 0;
  if (!flow->open) {
    if (flow->finished) {
      counters_.retransmitted_bytes += packet.payload.size();
      return;
    }
    if (!has_payload) return;  // a bare ACK/FIN of a flow we never saw carry data
    Open(key, *flow, packet.sequence, FlowOrigin::kMidStream, ts);
  }

  // Stream offset of this segment's first payload byte (32-bit sequence wrap-safe).
  const uint32_t expected_sequence = flow->base_sequence + static_cast<uint32_t>(flow->next_offset);
  const int64_t delta = static_cast<int32_t>(packet.sequence + ((packet.flags & kTcpSyn) ? 1 : 0) -
                                             expected_sequence);
  if (delta > kMaxAhead) return;
  if (delta < 0 && static_cast<uint64_t>(-delta) > flow->next_offset) {
    // Before the start of the stream: only old retransmissions land here.
    counters_.retransmitted_bytes += packet.payload.size();
    return;
  }
  const uint64_t offset = static_cast<uint64_t>(static_cast<int64_t>(flow->next_offset) + delta);
  if (!packet.payload.empty()) Accept(key, *flow, offset, packet.payload, ts);
  const uint64_t end = offset + packet.payload.size() + packet.payload_missing;
  if (packet.payload_missing > 0 && flow->next_offset == offset + packet.payload.size()) {
    // The snapshot length cut this packet: the rest of its payload is lost.
    ++counters_.gaps;
    counters_.gap_bytes += packet.payload_missing;
    sink_.OnStreamGap(key, packet.payload_missing, ts);
    flow->next_offset = end;
    DrainHeld(key, *flow, ts);
  }
  if ((packet.flags & kTcpFin) != 0) {
    flow->fin_seen = true;
    flow->fin_offset = end;
  }
  if (flow->fin_seen && flow->next_offset >= flow->fin_offset) {
    Close(key, *flow, FlowEnd::kFin, ts);
  }
}

void TcpReassembler::Finish(uint64_t ts) {
  for (auto& [key, flow] : flows_) {
    if (flow.open) Close(key, flow, FlowEnd::kCaptureStop, ts);
  }
}

}  // namespace artune::probes::pcap
