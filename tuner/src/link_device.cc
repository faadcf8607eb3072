#include "artune/tuner/link_device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <memory>

#include "artune/transport/credentials.h"
#include "artune/transport/devices.h"

namespace artune::tuner {
namespace {

struct IfaddrsDeleter {
  void operator()(ifaddrs* list) const { freeifaddrs(list); }
};
using Interfaces = std::unique_ptr<ifaddrs, IfaddrsDeleter>;

Interfaces ListInterfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return nullptr;
  return Interfaces(list);
}

std::string Ipv4Text(const sockaddr* address) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  return text;
}

std::string VerbsDeviceName(const transport::Config& config) {
  auto devices = transport::ListVerbsDevices();
  if (!devices.ok() || devices->empty()) return "verbs";
  for (const transport::VerbsDevice& device : *devices) {
    if (config.verbs_device != 0) {
      if (device.position == config.verbs_device) return device.name;
      continue;
    }
    for (const transport::VerbsPort& port : device.ports) {
      if (port.state == "ACTIVE") return device.name;
    }
  }
  return "verbs";
}

}  // namespace

std::string LinkDeviceName(std::string_view fabric, const transport::Config& config,
                           const std::string& host) {
  if (fabric == "verbs") return VerbsDeviceName(config);
  if (fabric == "shm") return "shm";
  Interfaces interfaces = ListInterfaces();
  for (ifaddrs* entry = interfaces.get(); entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if (Ipv4Text(entry->ifa_addr) == host) return "tcp:" + std::string(entry->ifa_name);
  }
  return "tcp:?";
}

Result<std::string> ClusterListenHost(const transport::Config& config) {
  if (config.fabric == transport::FabricKind::kVerbs) return transport::LocalListenHost(config);
  if (config.fabric == transport::FabricKind::kAuto) {
    // auto picks verbs where a device is active; then the RDMA netdev's address.
    Result<std::string> rdma = transport::LocalListenHost(config);
    if (rdma.ok() && !transport::IsLoopbackHost(*rdma)) return rdma;
  }
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(hostname, nullptr, &hints, &found) == 0) {
      std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
      for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
        const std::string address = Ipv4Text(entry->ai_addr);
        if (!transport::IsLoopbackHost(address)) return address;
      }
    }
  }
  Interfaces interfaces = ListInterfaces();
  for (ifaddrs* entry = interfaces.get(); entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0) continue;
    return Ipv4Text(entry->ifa_addr);
  }
  return Status::Unavailable(std::string("host ") + hostname +
                             " has no IPv4 address beyond loopback to listen on: pass --listen "
                             "with the address the other ranks reach this one at");
}

}  // namespace artune::tuner
