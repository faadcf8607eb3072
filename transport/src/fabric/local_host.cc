// LocalListenHost (devices.h): where an in-process server listens so that an
// in-process client reaches it over the selected fabric. Over verbs that is the
// IPv4 address of the RDMA netdev (getifaddrs), found through the device list
// that `artune devices` prints, chosen by the rule the verbs fabric opens devices
// with (verbs_fabric.cc: OpenDevice).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "artune/transport/devices.h"
#include "fabric/fabric.h"

namespace artune::transport {
namespace {

bool HasActivePort(const VerbsDevice& device) {
  for (const VerbsPort& port : device.ports) {
    if (port.state == "ACTIVE") return true;
  }
  return false;
}

Result<const VerbsDevice*> SelectDevice(const std::vector<VerbsDevice>& devices,
                                        uint32_t verbs_device) {
  if (devices.empty()) {
    return Status::Unavailable(
        "no verbs device on this host (`artune devices` lists none); use fabric = tcp");
  }
  if (verbs_device != 0) {
    for (const VerbsDevice& device : devices) {
      if (device.position == verbs_device) return &device;
    }
    return Status::InvalidArgument("verbs_device " + std::to_string(verbs_device) +
                                   ", but this host has " + std::to_string(devices.size()) +
                                   " verbs devices (see `artune devices`)");
  }
  for (const VerbsDevice& device : devices) {
    if (HasActivePort(device)) return &device;
  }
  return Status::Unavailable(
      "no verbs device has an ACTIVE port (see `artune devices`); use fabric = tcp");
}

// The netdev of the port's GIDs (every GID of a port names the same netdev).
Result<std::string> PortNetdev(const VerbsDevice& device, uint32_t verbs_port) {
  for (const VerbsPort& port : device.ports) {
    if (verbs_port != 0 ? port.number != verbs_port : port.state != "ACTIVE") continue;
    for (const VerbsGid& gid : port.gids) {
      if (!gid.netdev.empty()) return gid.netdev;
    }
    return Status::Unavailable("verbs device " + device.name + " port " +
                               std::to_string(port.number) +
                               " has no netdev (an InfiniBand port needs IPoIB); give the "
                               "address of a peer's `artune serve` instead");
  }
  return Status::Unavailable(
      "verbs device " + device.name + " has no " +
      (verbs_port != 0 ? "port " + std::to_string(verbs_port) : std::string("ACTIVE port")) +
      " (see `artune devices`)");
}

Result<std::string> NetdevIpv4(const std::string& netdev, const std::string& device) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Status::Unavailable(std::string("getifaddrs failed: ") + std::strerror(errno));
  }
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, &freeifaddrs);
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if (netdev != entry->ifa_name) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (inet_ntop(AF_INET, &address->sin_addr, text, sizeof text) == nullptr) continue;
    return std::string(text);
  }
  return Status::Unavailable("netdev " + netdev + " of verbs device " + device +
                             " has no IPv4 address; the RDMA connection manager needs one "
                             "(ip address add ADDR/PREFIX dev " +
                             netdev + ")");
}

}  // namespace

Result<std::string> LocalListenHost(const Config& config) {
  if (fabric::ResolveFabricKind(config.fabric) != FabricKind::kVerbs)
    return std::string("127.0.0.1");
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<VerbsDevice> devices, ListVerbsDevices());
  ARTUNE_ASSIGN_OR_RETURN(const VerbsDevice* device, SelectDevice(devices, config.verbs_device));
  ARTUNE_ASSIGN_OR_RETURN(const std::string netdev, PortNetdev(*device, config.verbs_port));
  return NetdevIpv4(netdev, device->name);
}

}  // namespace artune::transport
