// ListVerbsDevices (devices.h): ibv_get_device_list, then per device and port
// ibv_query_port and ibv_query_gid_ex (non-empty GID entries only).
#include "artune/transport/devices.h"

#include <infiniband/verbs.h>
#include <net/if.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fabric/verbs/verbs_util.h"

using artune::transport::fabric::verbs::MtuBytes;

namespace artune::transport {
namespace {

std::string GidText(const ibv_gid& gid) {
  char text[40];
  for (int i = 0; i < 8; ++i) {
    std::snprintf(text + i * 5, 6, "%02x%02x%s", gid.raw[2 * i], gid.raw[2 * i + 1],
                  i < 7 ? ":" : "");
  }
  return text;
}

// The names ibv_devinfo prints without its PORT_ prefix.
std::string PortStateName(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
  }
  return "state " + std::to_string(static_cast<int>(state));
}

std::string GidTypeName(uint32_t type) {
  switch (type) {
    case IBV_GID_TYPE_IB:
      return "IB";
    case IBV_GID_TYPE_ROCE_V1:
      return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
  }
  return "";
}

Result<VerbsPort> QueryPort(ibv_context* context, const std::string& device, uint8_t number,
                            uint32_t gid_table_len) {
  ibv_port_attr attr{};
  if (int rc = ibv_query_port(context, number, &attr); rc != 0) {
    return Status::Unavailable("ibv_query_port(" + device + " port " + std::to_string(number) +
                               ") failed: " + std::strerror(rc));
  }
  VerbsPort port;
  port.number = number;
  port.state = PortStateName(attr.state);
  port.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
  port.active_mtu = MtuBytes(attr.active_mtu);
  port.max_mtu = MtuBytes(attr.max_mtu);
  const uint32_t entries = std::max<uint32_t>(gid_table_len, attr.gid_tbl_len);
  for (uint32_t index = 0; index < entries; ++index) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context, number, index, &entry, 0) != 0) continue;  // empty entry
    bool zero = true;
    for (uint8_t byte : entry.gid.raw) zero = zero && byte == 0;
    if (zero) continue;
    VerbsGid gid;
    gid.index = index;
    gid.gid = GidText(entry.gid);
    gid.type = GidTypeName(entry.gid_type);
    char name[IF_NAMESIZE] = {};
    if (entry.ndev_ifindex != 0 && ::if_indextoname(entry.ndev_ifindex, name) != nullptr) {
      gid.netdev = name;
    }
    port.gids.push_back(std::move(gid));
  }
  return port;
}

}  // namespace

Result<std::vector<VerbsDevice>> ListVerbsDevices() {
  std::vector<VerbsDevice> devices;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    // ENOSYS: no ib_uverbs in this kernel. Nothing to list either way.
    return devices;
  }
  Status failure;
  for (int i = 0; i < count && failure.ok(); ++i) {
    VerbsDevice device;
    device.position = static_cast<uint32_t>(i + 1);
    device.name = ibv_get_device_name(list[i]);
    char guid[20];
    const uint64_t raw = be64toh(ibv_get_device_guid(list[i]));
    std::snprintf(guid, sizeof(guid), "%04x:%04x:%04x:%04x", static_cast<unsigned>(raw >> 48),
                  static_cast<unsigned>((raw >> 32) & 0xffff),
                  static_cast<unsigned>((raw >> 16) & 0xffff), static_cast<unsigned>(raw & 0xffff));
    device.node_guid = guid;
    ibv_context* context = ibv_open_device(list[i]);
    if (context == nullptr) {
      failure = Status::Unavailable("ibv_open_device(" + device.name + ") failed: " +
                                    std::strerror(errno) + "; check /dev/infiniband permissions");
      break;
    }
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(context, &attr); rc != 0) {
      failure =
          Status::Unavailable("ibv_query_device(" + device.name + ") failed: " + std::strerror(rc));
    }
    for (uint8_t p = 1; failure.ok() && p <= attr.phys_port_cnt; ++p) {
      Result<VerbsPort> port = QueryPort(context, device.name, p, 0);
      if (!port.ok()) {
        failure = port.status();
        break;
      }
      device.ports.push_back(std::move(port).value());
    }
    ibv_close_device(context);
    devices.push_back(std::move(device));
  }
  ibv_free_device_list(list);
  if (!failure.ok()) return failure;
  return devices;
}

}  // namespace artune::transport
