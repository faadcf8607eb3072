#include "pcap/packet_parser.h"

#include <pcap/dlt.h>

#include <algorithm>
#include <cstring>

namespace artune::probes::pcap {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88a8;
constexpr uint8_t kProtoTcp = 6;

uint16_t Read16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t Read32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Finds the network-layer offset and its ethertype for the link type.
bool LinkLayer(int link_type, std::span<const uint8_t> data, size_t& offset, uint16_t& ethertype) {
  switch (link_type) {
    case DLT_EN10MB: {
      if (data.size() < 14) return false;
      offset = 14;
      ethertype = Read16(&data[12]);
      for (int tags = 0; (ethertype == kEtherVlan || ethertype == kEtherQinQ) && tags < 2; ++tags) {
        if (data.size() < offset + 4) return false;
        ethertype = Read16(&data[offset + 2]);
        offset += 4;
      }
      return true;
    }
    case DLT_LINUX_SLL:
      if (data.size() < 16) return false;
      offset = 16;
      ethertype = Read16(&data[14]);
      return true;
    case DLT_LINUX_SLL2:
      if (data.size() < 20) return false;
      offset = 20;
      ethertype = Read16(&data[0]);
      return true;
    case DLT_NULL:
    case DLT_LOOP: {
      if (data.size() < 4) return false;
      offset = 4;
      uint32_t family = 0;
      std::memcpy(&family, data.data(), 4);
      if (link_type == DLT_LOOP) family = Read32(data.data());
      // BSD AF_INET is 2 everywhere; AF_INET6 is 24, 28 or 30 depending on the OS.
      if (family == 2 || family == 0x02000000) {
        ethertype = kEtherIpv4;
      } else {
        ethertype = kEtherIpv6;
      }
      return true;
    }
    case DLT_RAW:
    case 228:  // DLT_IPV4
    case 229:  // DLT_IPV6
      if (data.empty()) return false;
      offset = 0;
      ethertype = (data[0] >> 4) == 6 ? kEtherIpv6 : kEtherIpv4;
      return true;
    default:
      return false;
  }
}

// Where the IP layer leaves TCP: the TCP header's offset and the end of the IP
// datagram on the wire.
struct IpLayer {
  size_t transport = 0;
  uint64_t ip_end = 0;
};

// The IPv4 header at `offset`: the flow's addresses into `packet`, where TCP starts
// into `layer`; kTcp when TCP follows, else why not.
ParseOutcome ParseIpv4(std::span<const uint8_t> captured, size_t offset, uint64_t wire_size,
                       TcpPacket& packet, IpLayer& layer) {
  const size_t captured_size = captured.size();
  if (captured_size < offset + 20) return ParseOutcome::kMalformed;
  const uint8_t* ip = &captured[offset];
  if ((ip[0] >> 4) != 4) return ParseOutcome::kMalformed;
  const size_t header_length = size_t{ip[0] & 0x0fu} * 4;
  const uint16_t total_length = Read16(ip + 2);
  if (header_length < 20 || total_length < header_length) return ParseOutcome::kMalformed;
  if (offset + total_length > wire_size) return ParseOutcome::kMalformed;
  if (ip[9] != kProtoTcp) return ParseOutcome::kNotTcp;
  const uint16_t fragment = Read16(ip + 6);
  if ((fragment & 0x3fff) != 0) return ParseOutcome::kFragment;  // MF set or offset > 0
  packet.flow.source.family = Endpoint::Family::kIpv4;
  packet.flow.destination.family = Endpoint::Family::kIpv4;
  std::memcpy(packet.flow.source.address.data(), ip + 12, 4);
  std::memcpy(packet.flow.destination.address.data(), ip + 16, 4);
  layer.transport = offset + header_length;
  layer.ip_end = offset + total_length;
  return ParseOutcome::kTcp;
}

// The IPv6 header at `offset` and the extension headers after it, as ParseIpv4.
ParseOutcome ParseIpv6(std::span<const uint8_t> captured, size_t offset, uint64_t wire_size,
                       TcpPacket& packet, IpLayer& layer) {
  const size_t captured_size = captured.size();
  if (captured_size < offset + 40) return ParseOutcome::kMalformed;
  const uint8_t* ip = &captured[offset];
  if ((ip[0] >> 4) != 6) return ParseOutcome::kMalformed;
  const uint16_t payload_length = Read16(ip + 4);
  uint8_t next = ip[6];
  packet.flow.source.family = Endpoint::Family::kIpv6;
  packet.flow.destination.family = Endpoint::Family::kIpv6;
  std::memcpy(packet.flow.source.address.data(), ip + 8, 16);
  std::memcpy(packet.flow.destination.address.data(), ip + 24, 16);
  layer.transport = offset + 40;
  layer.ip_end = offset + 40 + payload_length;
  if (layer.ip_end > wire_size) return ParseOutcome::kMalformed;
  // Skip the extension headers that may precede TCP (hop-by-hop, routing,
  // destination options); a fragment header means a fragment.
  for (int hops = 0; hops < 8 && next != kProtoTcp; ++hops) {
    if (next == 44) return ParseOutcome::kFragment;
    if (next != 0 && next != 43 && next != 60) return ParseOutcome::kNotTcp;
    if (captured_size < layer.transport + 8) return ParseOutcome::kMalformed;
    next = captured[layer.transport];
    layer.transport += (size_t{captured[layer.transport + 1]} + 1) * 8;
  }
  if (next != kProtoTcp) return ParseOutcome::kNotTcp;
  return ParseOutcome::kTcp;
}

}  // namespace

ParseOutcome ParsePacket(int link_type, std::span<const uint8_t> captured, uint32_t wire_length,
                         TcpPacket& packet) {
  size_t offset = 0;
  uint16_t ethertype = 0;
  if (!LinkLayer(link_type, captured, offset, ethertype)) {
    return link_type == DLT_EN10MB || link_type == DLT_LINUX_SLL || link_type == DLT_LINUX_SLL2 ||
                   link_type == DLT_NULL || link_type == DLT_LOOP || link_type == DLT_RAW
               ? ParseOutcome::kMalformed
               : ParseOutcome::kUnsupportedLink;
  }
  const size_t captured_size = captured.size();
  // Bytes of the packet from `offset` on, as on the wire (caplen may be shorter).
  const uint64_t wire_size = std::max<uint64_t>(wire_length, captured_size);
  IpLayer layer;
  packet = TcpPacket{};
  ParseOutcome ip_outcome = ParseOutcome::kNotTcp;
  if (ethertype == kEtherIpv4) {
    ip_outcome = ParseIpv4(captured, offset, wire_size, packet, layer);
  } else if (ethertype == kEtherIpv6) {
    ip_outcome = ParseIpv6(captured, offset, wire_size, packet, layer);
  }
  if (ip_outcome != ParseOutcome::kTcp) return ip_outcome;
  const size_t transport = layer.transport;
  const uint64_t ip_end = layer.ip_end;

  if (captured_size < transport + 20 || ip_end < transport + 20) return ParseOutcome::kMalformed;
  const uint8_t* tcp = &captured[transport];
  const size_t tcp_header_length = static_cast<size_t>(tcp[12] >> 4) * 4;
  if (tcp_header_length < 20 || transport + tcp_header_length > ip_end) {
    return ParseOutcome::kMalformed;
  }
  packet.flow.source.port = Read16(tcp);
  packet.flow.destination.port = Read16(tcp + 2);
  packet.sequence = Read32(tcp + 4);
  packet.flags = tcp[13];
  const size_t payload_start = transport + tcp_header_length;
  const uint64_t payload_wire = ip_end - payload_start;
  // Ethernet pads short frames: the IP length, not the capture length, ends the payload.
  const size_t payload_captured =
      payload_start >= captured_size
          ? 0
          : static_cast<size_t>(std::min<uint64_t>(payload_wire, captured_size - payload_start));
  packet.payload = captured.subspan(std::min(payload_start, captured_size), payload_captured);
  packet.payload_missing = static_cast<uint32_t>(payload_wire - payload_captured);
  return ParseOutcome::kTcp;
}

}  // namespace artune::probes::pcap
