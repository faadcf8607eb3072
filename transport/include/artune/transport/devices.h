// The verbs devices of this host, as `artune devices` lists them and as the verbs
// fabric numbers them (knob verbs_device: 1-based position in this list).
//
// Threading: ListVerbsDevices opens each device briefly; call it from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config.h"

namespace artune::transport {

struct VerbsGid {
  uint32_t index = 0;
  std::string gid;     // "fe80:0000:...", colon-separated 16-bit groups
  std::string type;    // "IB", "RoCE v1", "RoCE v2" ("" when the kernel does not say)
  std::string netdev;  // the netdev the GID belongs to, when known
};

struct VerbsPort {
  uint32_t number = 0;         // 1-based
  std::string state;           // "ACTIVE", "DOWN", ...
  std::string link_layer;      // "Ethernet", "InfiniBand"
  uint32_t active_mtu = 0;     // bytes
  uint32_t max_mtu = 0;        // bytes
  std::vector<VerbsGid> gids;  // non-zero entries only
};

struct VerbsDevice {
  uint32_t position = 0;  // 1-based, the value of the verbs_device knob that selects it
  std::string name;       // "rxe0", "mlx5_0"
  std::string node_guid;
  std::vector<VerbsPort> ports;
};

// Every verbs device with its ports and GIDs. An empty list is not an error (no
// device, or no ib_uverbs): callers say so. kUnavailable when a device cannot be
// opened or queried (the message names it and the verb that failed).
Result<std::vector<VerbsDevice>> ListVerbsDevices();

// The host a server in this process should listen on so that a client in this
// process reaches it over the fabric `config` selects (fabric = auto resolved as
// the transport resolves it). tcp: "127.0.0.1". verbs: the IPv4 address of the
// netdev behind the selected device and port (verbs_device, else the first device
// with an ACTIVE port; verbs_port, else its first ACTIVE port), because the RDMA
// connection manager binds to an address of an RDMA netdev, never to loopback.
// kUnavailable when no such device, port or IPv4 address exists (the message names
// the device and netdev and says what to configure).
Result<std::string> LocalListenHost(const Config& config);

}  // namespace artune::transport
