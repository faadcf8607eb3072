// The link/IP/TCP header parser of the pcap backend on hand-built packets: IPv4 and
// IPv6 (with an extension header) to TCP, the fragments and other protocols it
// counts but does not follow, and headers that contradict their lengths.
#include "pcap/packet_parser.h"

#include <gtest/gtest.h>
#include <pcap/dlt.h>

#include <cstdint>
#include <vector>

namespace artune::probes::pcap {
namespace {

constexpr uint8_t kTcp = 6;
constexpr uint8_t kUdp = 17;

void Put16(std::vector<uint8_t>& out, size_t at, uint16_t value) {
  out[at] = static_cast<uint8_t>(value >> 8);
  out[at + 1] = static_cast<uint8_t>(value);
}

// A 20-byte TCP header (ports 40000 -> 50051, sequence 7, PSH|ACK) and `payload`.
std::vector<uint8_t> TcpSegment(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> tcp(20, 0);
  Put16(tcp, 0, 40000);
  Put16(tcp, 2, 50051);
  tcp[7] = 7;
  tcp[12] = 5 << 4;
  tcp[13] = 0x18;
  tcp.insert(tcp.end(), payload.begin(), payload.end());
  return tcp;
}

std::vector<uint8_t> Ipv4(uint8_t protocol, uint16_t fragment, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> ip(20, 0);
  ip[0] = 0x45;
  Put16(ip, 2, static_cast<uint16_t>(20 + body.size()));
  Put16(ip, 6, fragment);
  ip[9] = protocol;
  ip[12] = 10;  // from 10.0.0.1
  ip[15] = 1;
  ip[16] = 10;  // to 10.0.0.2
  ip[19] = 2;
  ip.insert(ip.end(), body.begin(), body.end());
  return ip;
}

// IPv6 from ::1 to ::2; with `hop_by_hop`, an 8-byte hop-by-hop header before `body`.
std::vector<uint8_t> Ipv6(uint8_t next, bool hop_by_hop, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> ip(40, 0);
  ip[0] = 0x60;
  ip[23] = 1;
  ip[39] = 2;
  std::vector<uint8_t> rest = body;
  if (hop_by_hop) {
    std::vector<uint8_t> extension(8, 0);
    extension[0] = next;
    rest.insert(rest.begin(), extension.begin(), extension.end());
    next = 0;
  }
  ip[6] = next;
  Put16(ip, 4, static_cast<uint16_t>(rest.size()));
  ip.insert(ip.end(), rest.begin(), rest.end());
  return ip;
}

ParseOutcome Parse(const std::vector<uint8_t>& packet, TcpPacket& parsed, int link = DLT_RAW) {
  return ParsePacket(link, packet, static_cast<uint32_t>(packet.size()), parsed);
}

TEST(PacketParserTest, Ipv4ToTcp) {
  const std::vector<uint8_t> packet = Ipv4(kTcp, 0x4000, TcpSegment({'a', 'b', 'c'}));  // DF
  TcpPacket parsed;
  ASSERT_EQ(Parse(packet, parsed), ParseOutcome::kTcp);
  EXPECT_EQ(parsed.flow.source.family, Endpoint::Family::kIpv4);
  EXPECT_EQ(parsed.flow.source.address[0], 10);
  EXPECT_EQ(parsed.flow.destination.address[3], 2);
  EXPECT_EQ(parsed.flow.source.port, 40000);
  EXPECT_EQ(parsed.flow.destination.port, 50051);
  EXPECT_EQ(parsed.sequence, 7u);
  EXPECT_EQ(parsed.flags, 0x18);
  ASSERT_EQ(parsed.payload.size(), 3u);
  EXPECT_EQ(parsed.payload[2], 'c');
  EXPECT_EQ(parsed.payload_missing, 0u);
}

TEST(PacketParserTest, Ipv6ThroughAnExtensionHeaderToTcp) {
  for (bool hop_by_hop : {false, true}) {
    const std::vector<uint8_t> packet = Ipv6(kTcp, hop_by_hop, TcpSegment({'x', 'y'}));
    TcpPacket parsed;
    ASSERT_EQ(Parse(packet, parsed), ParseOutcome::kTcp) << hop_by_hop;
    EXPECT_EQ(parsed.flow.source.family, Endpoint::Family::kIpv6);
    EXPECT_EQ(parsed.flow.source.address[15], 1);
    EXPECT_EQ(parsed.flow.destination.address[15], 2);
    EXPECT_EQ(parsed.flow.destination.port, 50051);
    ASSERT_EQ(parsed.payload.size(), 2u);
    EXPECT_EQ(parsed.payload[0], 'x');
  }
}

TEST(PacketParserTest, SnaplenCutsThePayloadNotTheCount) {
  const std::vector<uint8_t> packet = Ipv4(kTcp, 0, TcpSegment(std::vector<uint8_t>(100, 1)));
  const std::vector<uint8_t> captured(packet.begin(), packet.begin() + 60);
  TcpPacket parsed;
  ASSERT_EQ(ParsePacket(DLT_RAW, captured, static_cast<uint32_t>(packet.size()), parsed),
            ParseOutcome::kTcp);
  EXPECT_EQ(parsed.payload.size(), 20u);
  EXPECT_EQ(parsed.payload_missing, 80u);
}

TEST(PacketParserTest, FragmentsAndOtherProtocolsAreNotFollowed) {
  TcpPacket parsed;
  EXPECT_EQ(Parse(Ipv4(kTcp, 0x2000, TcpSegment({})), parsed), ParseOutcome::kFragment);  // MF
  EXPECT_EQ(Parse(Ipv4(kTcp, 0x0010, TcpSegment({})), parsed), ParseOutcome::kFragment);
  EXPECT_EQ(Parse(Ipv4(kUdp, 0, TcpSegment({})), parsed), ParseOutcome::kNotTcp);
  EXPECT_EQ(Parse(Ipv6(44, false, TcpSegment({})), parsed), ParseOutcome::kFragment);
  EXPECT_EQ(Parse(Ipv6(kUdp, false, TcpSegment({})), parsed), ParseOutcome::kNotTcp);
  EXPECT_EQ(Parse(Ipv6(kUdp, true, TcpSegment({})), parsed), ParseOutcome::kNotTcp);
  EXPECT_EQ(Parse(Ipv4(kTcp, 0, TcpSegment({})), parsed, 147), ParseOutcome::kUnsupportedLink);
}

TEST(PacketParserTest, HeadersThatContradictTheirLengthsAreMalformed) {
  TcpPacket parsed;
  std::vector<uint8_t> short_total = Ipv4(kTcp, 0, TcpSegment({'a'}));
  Put16(short_total, 2, 30);  // the datagram ends inside the TCP header
  EXPECT_EQ(Parse(short_total, parsed), ParseOutcome::kMalformed);
  std::vector<uint8_t> long_total = Ipv4(kTcp, 0, TcpSegment({'a'}));
  Put16(long_total, 2, 500);  // longer than the packet on the wire
  EXPECT_EQ(Parse(long_total, parsed), ParseOutcome::kMalformed);
  std::vector<uint8_t> long_payload = Ipv6(kTcp, false, TcpSegment({'a'}));
  Put16(long_payload, 4, 500);
  EXPECT_EQ(Parse(long_payload, parsed), ParseOutcome::kMalformed);
  // The hop-by-hop header is on the wire but cut from the capture.
  std::vector<uint8_t> cut_extension = Ipv6(kTcp, true, {});
  cut_extension.resize(44);
  EXPECT_EQ(ParsePacket(DLT_RAW, cut_extension, 48, parsed), ParseOutcome::kMalformed);
}

}  // namespace
}  // namespace artune::probes::pcap
