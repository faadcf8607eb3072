// Shared helpers of the transport engine tests: a loopback server with an echo
// handler, deterministic payloads and their validation. The suites are
// parameterised on FabricKind so the lab can run them on verbs unchanged.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "artune/transport/devices.h"
#include "artune/transport/transport.h"

namespace artune::transport::testing {

// Slices of these sizes filled with a pattern derived from (seed, slice, offset).
inline std::vector<std::vector<std::byte>> MakePayload(const std::vector<size_t>& sizes,
                                                       uint32_t seed) {
  std::vector<std::vector<std::byte>> slices;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<std::byte> slice(sizes[s]);
    uint32_t state = seed * 2654435761u + static_cast<uint32_t>(s) * 40503u + 1;
    for (size_t i = 0; i < slice.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      slice[i] = static_cast<std::byte>(state >> 24);
    }
    slices.push_back(std::move(slice));
  }
  return slices;
}

inline std::vector<ConstSlice> Views(const std::vector<std::vector<std::byte>>& slices) {
  std::vector<ConstSlice> views;
  for (const auto& slice : slices) views.emplace_back(slice.data(), slice.size());
  return views;
}

// True when `message` has exactly the slices of `expected`, byte for byte.
inline ::testing::AssertionResult SameSlices(const Message& message,
                                             const std::vector<std::vector<std::byte>>& expected) {
  if (message.slice_count() != expected.size()) {
    return ::testing::AssertionFailure()
           << "slice count " << message.slice_count() << ", expected " << expected.size();
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const ConstSlice got = message.slice(i);
    if (got.size() != expected[i].size()) {
      return ::testing::AssertionFailure()
             << "slice " << i << " has " << got.size() << " bytes, expected " << expected[i].size();
    }
    if (!got.empty() && std::memcmp(got.data(), expected[i].data(), got.size()) != 0) {
      return ::testing::AssertionFailure() << "slice " << i << " content differs";
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The IPv4 address of an RDMA netdev the verbs suites listen on: ARTUNE_TEST_VERBS_ADDR,
// else the lab's server address; "" when neither is set.
inline std::string VerbsTestAddress() {
  return EnvOr("ARTUNE_TEST_VERBS_ADDR", EnvOr("ARTUNE_LAB_SERVER_ADDR", "").c_str());
}

// Why the verbs instances of the suites cannot run on this machine ("" when they can).
inline std::string VerbsSkipReason() {
  Result<std::vector<VerbsDevice>> devices = ListVerbsDevices();
  if (!devices.ok()) return "verbs devices cannot be listed: " + devices.status().ToString();
  bool active = false;
  for (const VerbsDevice& device : *devices) {
    for (const VerbsPort& port : device.ports) active = active || port.state == "ACTIVE";
  }
  if (devices->empty()) return "no verbs device on this host (run the lab: ctest -L lab)";
  if (!active) return "no verbs device with an ACTIVE port";
  if (VerbsTestAddress().empty()) {
    return "set ARTUNE_TEST_VERBS_ADDR to the IPv4 address of an RDMA netdev";
  }
  return "";
}

// Where a test server listens: loopback for tcp, the RDMA netdev's address for verbs.
inline std::string TestListenAddress(FabricKind fabric) {
  return fabric == FabricKind::kVerbs ? VerbsTestAddress() + ":0" : "127.0.0.1:0";
}

inline Config TestConfig(FabricKind fabric) {
  Config config;
  config.fabric = fabric;
  config.timeout_ms = 20000;
  // The lab's Soft-RoCE under emulation retransmits for nothing at the default ACK
  // timeout; it tells us what to use.
  config.verbs_qp_timeout =
      static_cast<uint32_t>(std::atoi(EnvOr("ARTUNE_LAB_QP_TIMEOUT", "17").c_str()));
  return config;
}

// Registers "echo" (returns the request's slices; non-blocking, so it runs
// inline under handler_inline = auto), "echo_worker" (the same, always on a
// worker) and "fail" (returns an error).
inline void RegisterTestHandlers(Server& server) {
  auto echo = [](const Message& request, ResponseWriter& response) {
    for (const ConstSlice& slice : request.slices()) response.Append(slice);
    return Status::Ok();
  };
  server.RegisterHandler("echo", echo, HandlerOptions{.non_blocking = true});
  server.RegisterHandler("echo_worker", echo);
  server.RegisterHandler("fail", [](const Message&, ResponseWriter&) {
    return Status::InvalidArgument("handler refused the request");
  });
}

inline std::string FabricName(const ::testing::TestParamInfo<FabricKind>& info) {
  switch (info.param) {
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

// The fabrics the suites are instantiated for. The verbs instances skip, with
// VerbsSkipReason printed, where no verbs device is usable.
inline std::vector<FabricKind> TestFabrics() {
  return {FabricKind::kTcp, FabricKind::kShm, FabricKind::kVerbs};
}

// In a suite's SetUp: skips the verbs instance with the reason where it cannot run.
#define ARTUNE_SKIP_UNLESS_FABRIC_USABLE(fabric)                                  \
  do {                                                                            \
    if ((fabric) == ::artune::transport::FabricKind::kVerbs) {                    \
      const std::string reason = ::artune::transport::testing::VerbsSkipReason(); \
      if (!reason.empty()) GTEST_SKIP() << reason;                                \
    }                                                                             \
  } while (false)

}  // namespace artune::transport::testing
