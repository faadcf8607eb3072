// The fabric factory: the one place that knows which fabrics this build has.
#include "fabric/fabric.h"

#include "artune/transport/devices.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/tcp/tcp_fabric.h"
#include "fabric/verbs/verbs_fabric.h"

namespace artune::transport::fabric {
namespace {

bool HasActiveVerbsPort() {
  Result<std::vector<VerbsDevice>> devices = ListVerbsDevices();
  if (!devices.ok()) return false;
  for (const VerbsDevice& device : *devices) {
    for (const VerbsPort& port : device.ports) {
      if (port.state == "ACTIVE") return true;
    }
  }
  return false;
}

}  // namespace

FabricKind ResolveFabricKind(FabricKind kind) {
  if (kind != FabricKind::kAuto) return kind;
  return HasActiveVerbsPort() ? FabricKind::kVerbs : FabricKind::kTcp;
}

std::string_view FabricKindName(FabricKind kind) {
  switch (kind) {
    case FabricKind::kTcp:
      return "tcp";
    case FabricKind::kVerbs:
      return "verbs";
    case FabricKind::kAuto:
      return "auto";
    case FabricKind::kShm:
      return "shm";
  }
  return "unknown";
}

Result<std::unique_ptr<Fabric>> MakeFabric(FabricKind kind, const Config& config) {
  if (ResolveFabricKind(kind) == FabricKind::kVerbs) {
    auto fabric = std::make_unique<verbs::VerbsFabric>(config);
    ARTUNE_RETURN_IF_ERROR(fabric->Init());
    return std::unique_ptr<Fabric>(std::move(fabric));
  }
  if (kind == FabricKind::kShm) {
    auto fabric = std::make_unique<shm::ShmFabric>(config.polling);
    fabric->SetPollSpin(config.poll_spin_us);
    ARTUNE_RETURN_IF_ERROR(fabric->Init());
    return std::unique_ptr<Fabric>(std::move(fabric));
  }
  auto fabric = std::make_unique<tcp::TcpFabric>(config.polling);
  fabric->SetPollSpin(config.poll_spin_us);
  ARTUNE_RETURN_IF_ERROR(fabric->Init());
  return std::unique_ptr<Fabric>(std::move(fabric));
}

}  // namespace artune::transport::fabric
