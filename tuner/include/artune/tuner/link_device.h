// How a cluster run names the device each end of a link measured over, and which
// address a rank listens on: the one place for both, so the store, the JSON and
// the analysis see one spelling.
#pragma once

#include <string>
#include <string_view>

#include "artune/status.h"
#include "artune/transport/config.h"

namespace artune::tuner {

// "rxe0" for the verbs fabric (the device `config` selects: verbs_device, else the
// first with an ACTIVE port; "verbs" when none can be listed); "tcp:eth0" for tcp
// (the interface that holds `host`; "tcp:?" when none does); "shm" for shm.
// `fabric` is the fabric the transport resolved ("tcp" | "verbs" | "shm").
std::string LinkDeviceName(std::string_view fabric, const transport::Config& config,
                           const std::string& host);

// The address a rank of a cluster run listens on when not told: over verbs the
// RDMA netdev's (transport::LocalListenHost); else the first IPv4 address the
// hostname resolves to that is not loopback, else the first IPv4 address of an
// interface that is up and not loopback (a host whose name resolves to 127.0.1.1,
// as Debian writes /etc/hosts). kUnavailable when there is none (pass --listen).
Result<std::string> ClusterListenHost(const transport::Config& config);

}  // namespace artune::tuner
