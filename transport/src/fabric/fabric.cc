// The fabric factory: the one place that knows which fabrics this build has.
#include "fabric/fabric.h"

#include "fabric/tcp/tcp_fabric.h"

namespace artune::transport::fabric {

FabricKind ResolveFabricKind(FabricKind kind) {
  // No verbs fabric in this build yet (issue 3): auto means tcp.
  return kind == FabricKind::kAuto ? FabricKind::kTcp : kind;
}

std::string_view FabricKindName(FabricKind kind) {
  switch (kind) {
    case FabricKind::kTcp:
      return "tcp";
    case FabricKind::kVerbs:
      return "verbs";
    case FabricKind::kAuto:
      return "auto";
  }
  return "unknown";
}

Result<std::unique_ptr<Fabric>> MakeFabric(FabricKind kind, PollingMode polling) {
  switch (ResolveFabricKind(kind)) {
    case FabricKind::kTcp: {
      auto fabric = std::make_unique<tcp::TcpFabric>(polling);
      ARTUNE_RETURN_IF_ERROR(fabric->Init());
      return std::unique_ptr<Fabric>(std::move(fabric));
    }
    case FabricKind::kVerbs:
    case FabricKind::kAuto:
      break;
  }
  return Status::Unsupported(
      "no verbs fabric in this build; set fabric = \"tcp\" (or \"auto\") to use the tcp fabric");
}

}  // namespace artune::transport::fabric
