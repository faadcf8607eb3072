// Link, IP and TCP header parsing for captured packets. Internal to probes/pcap.
// Bounds-checked against the captured length; never reads past it.
#pragma once

#include <cstdint>
#include <span>

#include "artune/probes/event.h"

namespace artune::probes::pcap {

enum TcpFlag : uint8_t { kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04 };

struct TcpPacket {
  FlowKey flow;
  uint32_t sequence = 0;
  uint8_t flags = 0;
  std::span<const uint8_t> payload;  // the captured part of the TCP payload
  uint32_t payload_missing = 0;      // payload bytes on the wire but not captured (snaplen)
};

enum class ParseOutcome : uint8_t {
  kTcp,
  kNotTcp,     // another protocol: ignored
  kFragment,   // an IP fragment: not reassembled, counted
  kMalformed,  // headers inconsistent with the lengths: counted
  kUnsupportedLink,
};

// `link_type` is a pcap DLT_* value; `captured` the bytes pcap kept; `wire_length`
// the packet's original length.
ParseOutcome ParsePacket(int link_type, std::span<const uint8_t> captured, uint32_t wire_length,
                         TcpPacket& packet);

}  // namespace artune::probes::pcap
