// The known traffic of the iovec_traffic helper, shared with the tests that trace
// it: each backend must recover exactly these calls and iovec lengths.
#pragma once

#include <cstdint>
#include <vector>

namespace artune::probes::testing {

enum class ScriptedKind { kSendmsg, kWritev, kSend, kWrite };

struct ScriptedCall {
  ScriptedKind kind;
  std::vector<uint32_t> lengths;
};

inline std::vector<ScriptedCall> IovecScript() {
  std::vector<ScriptedCall> script;
  script.push_back({ScriptedKind::kSendmsg, {100}});
  script.push_back({ScriptedKind::kSendmsg, {9, 5, 1024, 4096, 1}});
  std::vector<uint32_t> grpc_like;  // gRPC's largest sendmsg: 260 slices
  for (uint32_t i = 0; i < 260; ++i) grpc_like.push_back((i * 37) % 3001 + 1);
  script.push_back({ScriptedKind::kSendmsg, grpc_like});
  script.push_back({ScriptedKind::kSendmsg, std::vector<uint32_t>(1024, 8)});  // UIO_MAXIOV
  script.push_back({ScriptedKind::kWritev, {10, 20, 30}});
  script.push_back({ScriptedKind::kSend, {777}});
  script.push_back({ScriptedKind::kWrite, {555}});
  script.push_back({ScriptedKind::kSendmsg, {1u << 20}});
  script.push_back({ScriptedKind::kSendmsg, {16, 0, 16}});
  return script;
}

inline uint64_t ScriptBytes() {
  uint64_t total = 0;
  for (const auto& call : IovecScript())
    for (uint32_t length : call.lengths) total += length;
  return total;
}

// Byte i of the client-to-server stream.
inline uint8_t PatternByte(uint64_t i) { return static_cast<uint8_t>(i * 131 + 7); }

}  // namespace artune::probes::testing
