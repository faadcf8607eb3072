#include "artune/tuner/bench_transport.h"

#include <charconv>

#include "artune/tuner/checksum.h"

namespace artune::tuner {

Result<std::unique_ptr<BenchTransport>> MakeBenchTransport(std::string_view name,
                                                           const transport::Config& config) {
  if (name == "artune") return MakeArtuneBenchTransport(config);
  if (name == "grpc") return MakeGrpcBenchTransport();
  return Status::InvalidArgument("unknown transport '" + std::string(name) +
                                 "': use artune or grpc");
}

std::unique_ptr<BenchTransport> MakeGrpcServerTransport(int threads,
                                                        const transport::Config& config) {
  GrpcBenchOptions options;
  options.server_threads = threads;
  options.timeout = std::chrono::milliseconds(config.timeout_ms);
  return MakeGrpcBenchTransport(options);
}

Result<std::string> ServerAddressFor(std::string_view transport_name, const std::string& address,
                                     int server_index) {
  size_t colon = address.rfind(':');
  int port = 0;
  const char* begin = address.data() + (colon == std::string::npos ? 0 : colon + 1);
  const char* end = address.data() + address.size();
  auto [ptr, error] = std::from_chars(begin, end, port);
  if (colon == std::string::npos || colon == 0 || error != std::errc() || ptr != end || port <= 0 ||
      port > 65535) {
    return Status::InvalidArgument("bad server address '" + address +
                                   "': use HOST:PORT with a port of 1..65535");
  }
  int offset = 2 * server_index + (transport_name == "grpc" ? 1 : 0);
  if (port + offset > 65535) {
    return Status::InvalidArgument("server " + std::to_string(server_index) + " of " + address +
                                   " would need port " + std::to_string(port + offset) +
                                   ", past 65535: choose a lower base port");
  }
  return address.substr(0, colon) + ":" + std::to_string(port + offset);
}

Status ValidateBenchReply(BenchMethod method, std::span<const std::span<const std::byte>> reply,
                          const Payload& payload) {
  switch (method) {
    case BenchMethod::kEcho:
      return ValidateEcho(reply, payload);
    case BenchMethod::kAck:
      return ValidateAck(reply, payload);
    case BenchMethod::kCount:
      return ValidateCount(reply, payload);
  }
  return Status::Internal("unknown bench method");
}

}  // namespace artune::tuner
