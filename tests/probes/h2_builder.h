// Builds HTTP/2 + gRPC byte streams and pcap files for the probe tests, the fuzz
// seeds and the benchmark: frames by hand, header blocks with nghttp2's deflater
// (so the dynamic table really is used), TCP/IPv4 packets written with pcap_dump.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "artune/probes/event.h"

namespace artune::probes::testing {

using Bytes = std::vector<uint8_t>;

inline constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void Append(Bytes& out, const Bytes& more);
Bytes Frame(uint8_t type, uint8_t flags, uint32_t stream_id, const Bytes& payload);
Bytes SettingsFrame();
// A DATA frame; with pad_length > 0 the PADDED flag and that many zero bytes.
Bytes DataFrame(uint32_t stream_id, const Bytes& data, bool end_stream, uint8_t pad_length = 0);
// A gRPC message: flag byte, 4-byte big-endian length, payload.
Bytes GrpcMessageBytes(const Bytes& payload, bool compressed = false);
Bytes Filler(size_t size, uint8_t seed = 0);

// A serialized RecvTensorResponse{tensor: TensorProto{dtype, shape, tensor_content}}.
Bytes RecvTensorResponse(int32_t dtype, const std::vector<int64_t>& shape, size_t content_bytes);

// One HPACK encoder per direction, as a real peer has.
class HeaderEncoder {
 public:
  HeaderEncoder();
  ~HeaderEncoder();
  HeaderEncoder(const HeaderEncoder&) = delete;
  HeaderEncoder& operator=(const HeaderEncoder&) = delete;
  Bytes Encode(const std::vector<std::pair<std::string, std::string>>& headers);

 private:
  nghttp2_hd_deflater* deflater_ = nullptr;
};

std::vector<std::pair<std::string, std::string>> RequestHeaders(const std::string& path);
std::vector<std::pair<std::string, std::string>> ResponseHeaders();
std::vector<std::pair<std::string, std::string>> Trailers();

// HEADERS (+ CONTINUATION frames when the block is longer than `max_fragment`).
Bytes HeadersFrames(uint32_t stream_id, const Bytes& block, bool end_stream,
                    size_t max_fragment = 16384, uint8_t pad_length = 0);

// A client and server byte stream of `calls` unary calls on one connection.
struct Conversation {
  Bytes client;  // preface, SETTINGS, requests
  Bytes server;  // SETTINGS, responses
};
// Unary call i: request `request_size` bytes; response a RecvTensorResponse with
// `tensor_elements` floats when `path` is RecvTensor, else `response_size` bytes.
struct CallSpec {
  std::string path;
  size_t request_size = 16;
  size_t response_size = 0;
  std::vector<int64_t> tensor_shape;  // RecvTensor: DT_FLOAT of this shape
  size_t max_data_frame = 16384;
};
Conversation BuildConversation(const std::vector<CallSpec>& calls);

// ---- packets and pcap files ----

struct Packet {
  probes::FlowKey flow;
  uint32_t sequence = 0;
  uint8_t flags = 0;  // TCP flags byte (0x10 ACK is added)
  Bytes payload;
  uint64_t timestamp_ns = 0;
};

probes::Endpoint Ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port);
// Segments `stream` into packets of at most `mss` bytes starting at `isn + 1`
// (a SYN with `isn` first when `with_syn`), then a FIN when `with_fin`.
std::vector<Packet> Segment(const probes::FlowKey& flow, const Bytes& stream, uint32_t isn,
                            size_t mss, bool with_syn, bool with_fin);
// Writes Ethernet/IPv4/TCP packets to a pcap file with libpcap's pcap_dump.
void WritePcap(const std::string& path, const std::vector<Packet>& packets);
// A unique path in the test's temp dir.
std::string TempPath(const std::string& name);

}  // namespace artune::probes::testing
