#include "grpc_process.h"

#include <grpc/grpc.h>

namespace artune::tuner {

void KeepGrpcUntilExit() {
  // One reference of gRPC's own count, never released: grpc_shutdown calls by
  // channels and servers going away then never bring the count to zero.
  static const bool kept = [] {
    grpc_init();
    return true;
  }();
  (void)kept;
}

}  // namespace artune::tuner
