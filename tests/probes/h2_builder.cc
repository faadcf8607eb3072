#include "h2_builder.h"

#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace artune::probes::testing {

void Append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

Bytes Frame(uint8_t type, uint8_t flags, uint32_t stream_id, const Bytes& payload) {
  const uint32_t length = static_cast<uint32_t>(payload.size());
  Bytes out = {static_cast<uint8_t>(length >> 16),
               static_cast<uint8_t>(length >> 8),
               static_cast<uint8_t>(length),
               type,
               flags,
               static_cast<uint8_t>(stream_id >> 24),
               static_cast<uint8_t>(stream_id >> 16),
               static_cast<uint8_t>(stream_id >> 8),
               static_cast<uint8_t>(stream_id)};
  Append(out, payload);
  return out;
}

Bytes SettingsFrame() {
  // SETTINGS_INITIAL_WINDOW_SIZE = 65535, as a real peer might send.
  return Frame(4, 0, 0, {0x00, 0x04, 0x00, 0x00, 0xff, 0xff});
}

Bytes DataFrame(uint32_t stream_id, const Bytes& data, bool end_stream, uint8_t pad_length) {
  Bytes payload;
  uint8_t flags = end_stream ? 0x1 : 0;
  if (pad_length > 0) {
    flags |= 0x8;
    payload.push_back(pad_length);
  }
  Append(payload, data);
  payload.resize(payload.size() + pad_length, 0);
  return Frame(0, flags, stream_id, payload);
}

Bytes GrpcMessageBytes(const Bytes& payload, bool compressed) {
  const uint32_t length = static_cast<uint32_t>(payload.size());
  Bytes out = {static_cast<uint8_t>(compressed ? 1 : 0), static_cast<uint8_t>(length >> 24),
               static_cast<uint8_t>(length >> 16), static_cast<uint8_t>(length >> 8),
               static_cast<uint8_t>(length)};
  Append(out, payload);
  return out;
}

Bytes Filler(size_t size, uint8_t seed) {
  Bytes out(size);
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(seed + i * 31);
  return out;
}

namespace {

void PutVarint(Bytes& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

void PutLengthDelimited(Bytes& out, uint32_t field, const Bytes& value) {
  PutVarint(out, (uint64_t{field} << 3) | 2);
  PutVarint(out, value.size());
  Append(out, value);
}

}  // namespace

Bytes RecvTensorResponse(int32_t dtype, const std::vector<int64_t>& shape, size_t content_bytes) {
  Bytes shape_bytes;
  for (int64_t size : shape) {
    Bytes dim;
    PutVarint(dim, 0x08);
    PutVarint(dim, static_cast<uint64_t>(size));
    PutLengthDelimited(shape_bytes, 2, dim);
  }
  Bytes tensor;
  PutVarint(tensor, 0x08);
  PutVarint(tensor, static_cast<uint64_t>(dtype));
  PutLengthDelimited(tensor, 2, shape_bytes);
  PutLengthDelimited(tensor, 4, Filler(content_bytes, 7));
  Bytes response;
  PutLengthDelimited(response, 1, tensor);
  PutVarint(response, 0x18);  // send_start_micros = 3
  PutVarint(response, 1234567);
  return response;
}

HeaderEncoder::HeaderEncoder() {
  if (nghttp2_hd_deflate_new(&deflater_, 4096) != 0) throw std::runtime_error("deflater");
}
HeaderEncoder::~HeaderEncoder() { nghttp2_hd_deflate_del(deflater_); }

Bytes HeaderEncoder::Encode(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<nghttp2_nv> fields;
  for (const auto& [name, value] : headers) {
    fields.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                      value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  Bytes out(nghttp2_hd_deflate_bound(deflater_, fields.data(), fields.size()));
  const ssize_t used =
      nghttp2_hd_deflate_hd(deflater_, out.data(), out.size(), fields.data(), fields.size());
  if (used < 0) throw std::runtime_error("deflate");
  out.resize(static_cast<size_t>(used));
  return out;
}

std::vector<std::pair<std::string, std::string>> RequestHeaders(const std::string& path) {
  return {{":method", "POST"},
          {":scheme", "http"},
          {":path", path},
          {":authority", "127.0.0.1:50051"},
          {"content-type", "application/grpc"},
          {"te", "trailers"},
          {"user-agent", "grpc-c++/1.51 artune-test"}};
}

std::vector<std::pair<std::string, std::string>> ResponseHeaders() {
  return {{":status", "200"}, {"content-type", "application/grpc"}};
}

std::vector<std::pair<std::string, std::string>> Trailers() {
  return {{"grpc-status", "0"}, {"grpc-message", ""}};
}

Bytes HeadersFrames(uint32_t stream_id, const Bytes& block, bool end_stream, size_t max_fragment,
                    uint8_t pad_length) {
  Bytes out;
  size_t offset = 0;
  bool first = true;
  do {
    const size_t take = std::min(max_fragment, block.size() - offset);
    const Bytes fragment(block.begin() + static_cast<long>(offset),
                         block.begin() + static_cast<long>(offset + take));
    offset += take;
    const bool last = offset == block.size();
    uint8_t flags = last ? 0x4 : 0;
    if (first) {
      if (end_stream) flags |= 0x1;
      Bytes payload;
      if (pad_length > 0) {
        flags |= 0x8;
        payload.push_back(pad_length);
      }
      Append(payload, fragment);
      payload.resize(payload.size() + pad_length, 0);
      Append(out, Frame(1, flags, stream_id, payload));
    } else {
      Append(out, Frame(9, flags, stream_id, fragment));
    }
    first = false;
  } while (offset < block.size());
  return out;
}

namespace {

void AppendDataFrames(Bytes& out, uint32_t stream_id, const Bytes& message, size_t max_frame,
                      bool end_stream) {
  size_t offset = 0;
  do {
    const size_t take = std::min(max_frame, message.size() - offset);
    const Bytes chunk(message.begin() + static_cast<long>(offset),
                      message.begin() + static_cast<long>(offset + take));
    offset += take;
    Append(out, DataFrame(stream_id, chunk, end_stream && offset == message.size()));
  } while (offset < message.size());
}

}  // namespace

Conversation BuildConversation(const std::vector<CallSpec>& calls) {
  Conversation c;
  HeaderEncoder client_encoder;
  HeaderEncoder server_encoder;
  c.client.assign(kPreface.begin(), kPreface.end());
  Append(c.client, SettingsFrame());
  Append(c.server, SettingsFrame());
  uint32_t stream_id = 1;
  for (const CallSpec& call : calls) {
    Append(c.client,
           HeadersFrames(stream_id, client_encoder.Encode(RequestHeaders(call.path)), false));
    AppendDataFrames(c.client, stream_id, GrpcMessageBytes(Filler(call.request_size)),
                     call.max_data_frame, true);
    Append(c.server, HeadersFrames(stream_id, server_encoder.Encode(ResponseHeaders()), false));
    Bytes response = call.tensor_shape.empty() ? Filler(call.response_size, 3)
                                               : RecvTensorResponse(1, call.tensor_shape, [&] {
                                                   size_t elements = 1;
                                                   for (int64_t d : call.tensor_shape)
                                                     elements *= static_cast<size_t>(d);
                                                   return elements * 4;
                                                 }());
    AppendDataFrames(c.server, stream_id, GrpcMessageBytes(response), call.max_data_frame, false);
    Append(c.server, HeadersFrames(stream_id, server_encoder.Encode(Trailers()), true));
    stream_id += 2;
  }
  return c;
}

probes::Endpoint Ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port) {
  probes::Endpoint e;
  e.family = probes::Endpoint::Family::kIpv4;
  e.address[0] = a;
  e.address[1] = b;
  e.address[2] = c;
  e.address[3] = d;
  e.port = port;
  return e;
}

std::vector<Packet> Segment(const probes::FlowKey& flow, const Bytes& stream, uint32_t isn,
                            size_t mss, bool with_syn, bool with_fin) {
  std::vector<Packet> packets;
  uint64_t ts = 1'700'000'000'000'000'000ull;
  if (with_syn) packets.push_back({flow, isn, 0x02, {}, ts});
  uint32_t sequence = isn + 1;
  for (size_t offset = 0; offset < stream.size(); offset += mss) {
    const size_t take = std::min(mss, stream.size() - offset);
    ts += 1000;
    packets.push_back({flow, sequence, 0x18,
                       Bytes(stream.begin() + static_cast<long>(offset),
                             stream.begin() + static_cast<long>(offset + take)),
                       ts});
    sequence += static_cast<uint32_t>(take);
  }
  if (with_fin) packets.push_back({flow, sequence, 0x11, {}, ts + 1000});
  return packets;
}

void WritePcap(const std::string& path, const std::vector<Packet>& packets) {
  pcap_t* dead =
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 262144, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* dumper = pcap_dump_open(dead, path.c_str());
  if (dumper == nullptr) throw std::runtime_error("pcap_dump_open " + path);
  for (const Packet& p : packets) {
    Bytes frame(14 + 20 + 20 + p.payload.size(), 0);
    frame[12] = 0x08;  // IPv4
    uint8_t* ip = &frame[14];
    ip[0] = 0x45;
    const uint16_t total = static_cast<uint16_t>(40 + p.payload.size());
    ip[2] = static_cast<uint8_t>(total >> 8);
    ip[3] = static_cast<uint8_t>(total);
    ip[6] = 0x40;  // DF
    ip[8] = 64;
    ip[9] = 6;
    std::memcpy(ip + 12, p.flow.source.address.data(), 4);
    std::memcpy(ip + 16, p.flow.destination.address.data(), 4);
    uint8_t* tcp = ip + 20;
    tcp[0] = static_cast<uint8_t>(p.flow.source.port >> 8);
    tcp[1] = static_cast<uint8_t>(p.flow.source.port);
    tcp[2] = static_cast<uint8_t>(p.flow.destination.port >> 8);
    tcp[3] = static_cast<uint8_t>(p.flow.destination.port);
    for (int i = 0; i < 4; ++i) tcp[4 + i] = static_cast<uint8_t>(p.sequence >> (24 - 8 * i));
    tcp[12] = 0x50;
    tcp[13] = static_cast<uint8_t>(p.flags | 0x10);
    tcp[14] = 0xff;
    tcp[15] = 0xff;
    std::copy(p.payload.begin(), p.payload.end(), tcp + 20);
    pcap_pkthdr header{};
    header.ts.tv_sec = static_cast<time_t>(p.timestamp_ns / 1'000'000'000ull);
    header.ts.tv_usec = static_cast<suseconds_t>(p.timestamp_ns % 1'000'000'000ull);
    header.caplen = static_cast<uint32_t>(frame.size());
    header.len = header.caplen;
    pcap_dump(reinterpret_cast<u_char*>(dumper), &header, frame.data());
  }
  pcap_dump_close(dumper);
  pcap_close(dead);
}

std::string TempPath(const std::string& name) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path();
  return (dir / ("artune_probes_" + std::to_string(getpid()) + "_" + std::to_string(counter++) +
                 "_" + name))
      .string();
}

}  // namespace artune::probes::testing
