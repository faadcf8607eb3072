// Small helpers of the verbs fabric: MTU enum <-> bytes, readable verbs statuses.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <string>

namespace artune::transport::fabric::verbs {

inline uint32_t MtuBytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

// The verbs MTU for `bytes` (one of 256 .. 4096, as ValidateConfig enforces).
inline ibv_mtu MtuFromBytes(uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

// "IBV_WC_REMOTE_ACCESS_ERR (remote access error)": the enum name users grep for,
// then libibverbs' own text.
std::string WcStatusText(ibv_wc_status status);

// "RDMA_CM_EVENT_REJECTED".
inline std::string CmEventText(rdma_cm_event_type type) { return rdma_event_str(type); }

}  // namespace artune::transport::fabric::verbs
