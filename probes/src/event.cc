#include <arpa/inet.h>

#include "artune/probes/backend.h"
#include "artune/probes/event.h"

namespace artune::probes {

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
  switch (call) {
    case IoSyscall::kSendmsg:
      return "sendmsg";
    case IoSyscall::kRecvmsg:
      return "recvmsg";
    case IoSyscall::kWritev:
      return "writev";
    case IoSyscall::kReadv:
      return "readv";
    case IoSyscall::kSendto:
      return "sendto";
    case IoSyscall::kRecvfrom:
      return "recvfrom";
    case IoSyscall::kWrite:
      return "write";
    case IoSyscall::kRead:
      return "read";
  }
  return "unknown";
}

bool IsSendSyscall(IoSyscall call) {
  return call == IoSyscall::kSendmsg || call == IoSyscall::kWritev || call == IoSyscall::kSendto ||
         call == IoSyscall::kWrite;
}

const char* BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kPcap:
      return "pcap";
    case BackendKind::kEbpf:
      return "ebpf";
    case BackendKind::kPreload:
      return "preload";
  }
  return "unknown";
}

}  // namespace artune::probes
