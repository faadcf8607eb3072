// libFuzzer target for the pcap path after libpcap: arbitrary bytes as a series of
// captured packets (2-byte length prefix each), through the link/IP/TCP parser, the
// TCP reassembler and a ProbeSession with its HTTP/2 decoders.
#include <pcap/dlt.h>

#include <cstddef>
#include <cstdint>

#include "artune/probes/session.h"
#include "pcap/packet_parser.h"
#include "pcap/tcp_reassembler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace artune::probes;
  if (size < 1) return 0;
  static constexpr int kLinkTypes[] = {
      DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_RAW, DLT_NULL, DLT_LOOP, 147};
  const int link_type = kLinkTypes[data[0] % (sizeof kLinkTypes / sizeof kLinkTypes[0])];
  ++data;
  --size;
  SessionOptions options;
  options.max_connections = 8;
  options.decoder_limits.resync_buffer_bytes = 4096;
  ProbeSession session(options);
  pcap::ReassemblyLimits limits;
  limits.max_held_bytes_per_flow = 8192;
  limits.max_flows = 16;
  pcap::TcpReassembler reassembler(session, limits);
  uint64_t ts = 0;
  while (size >= 2) {
    const size_t length = std::min<size_t>((size_t{data[0]} << 8 | data[1]), size - 2);
    const std::span<const uint8_t> packet(data + 2, length);
    // The wire length may exceed what was captured (snaplen), as in real captures.
    const uint32_t wire_length = static_cast<uint32_t>(length + (length > 0 ? data[2] % 64 : 0));
    pcap::TcpPacket parsed;
    if (pcap::ParsePacket(link_type, packet, wire_length, parsed) == pcap::ParseOutcome::kTcp) {
      reassembler.OnPacket(parsed, ts);
    }
    ts += 1000;
    data += 2 + length;
    size -= 2 + length;
  }
  reassembler.Finish(ts);
  (void)session.Finish("pcap", BackendCounters{}, 0);
  return 0;
}
