#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>
#include <cstring>

#include "artune/base/enum_names.h"
#include "artune/probes/backend.h"
#include "artune/probes/event.h"

namespace artune::probes {

Endpoint Endpoint::FromSocketAddress(uint16_t family, const uint8_t* address, uint16_t port) {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  Endpoint endpoint;
  endpoint.port = port;
  if (family == AF_INET6 && std::memcmp(address, kMappedPrefix, sizeof(kMappedPrefix)) != 0) {
    endpoint.family = Family::kIpv6;
    std::memcpy(endpoint.address.data(), address, 16);
  } else {
    endpoint.family = Family::kIpv4;
    std::memcpy(endpoint.address.data(), family == AF_INET6 ? address + 12 : address, 4);
  }
  return endpoint;
}

std::string Endpoint::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family == Family::kIpv4) {
    inet_ntop(AF_INET, address.data(), text, sizeof text);
    return std::string(text) + ":" + std::to_string(port);
  }
  inet_ntop(AF_INET6, address.data(), text, sizeof text);
  return "[" + std::string(text) + "]:" + std::to_string(port);
}

std::string FlowKey::ToString() const {
  return source.ToString() + " -> " + destination.ToString();
}

const char* IoSyscallName(IoSyscall call) {
  // NUL-terminated literals: the callers take a C string.
  static constexpr std::array<EnumName<IoSyscall>, 8> kNames = {{
      {IoSyscall::kSendmsg, "sendmsg"},
      {IoSyscall::kRecvmsg, "recvmsg"},
      {IoSyscall::kWritev, "writev"},
      {IoSyscall::kReadv, "readv"},
      {IoSyscall::kSendto, "sendto"},
      {IoSyscall::kRecvfrom, "recvfrom"},
      {IoSyscall::kWrite, "write"},
      {IoSyscall::kRead, "read"},
  }};
  return NameOf(kNames, call, "unknown").data();
}

bool IsSendSyscall(IoSyscall call) {
  return call == IoSyscall::kSendmsg || call == IoSyscall::kWritev || call == IoSyscall::kSendto ||
         call == IoSyscall::kWrite;
}

const char* BackendKindName(BackendKind kind) {
  static constexpr std::array<EnumName<BackendKind>, 3> kNames = {{
      {BackendKind::kPcap, "pcap"},
      {BackendKind::kEbpf, "ebpf"},
      {BackendKind::kPreload, "preload"},
  }};
  return NameOf(kNames, kind, "unknown").data();
}

}  // namespace artune::probes
