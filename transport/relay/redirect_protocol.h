// What the interposer (redirect.cc, inside the program) asks `artune run`'s relay
// over the unix socket named by ARTUNE_RELAY_SOCKET, one SOCK_SEQPACKET exchange
// per connect(): a destination, and the answer for it.
#pragma once

#include <cstdint>

namespace artune::relay {

inline constexpr const char* kRedirectSocketEnv = "ARTUNE_RELAY_SOCKET";
inline constexpr uint32_t kRedirectMagic = 0x61727231;  // "arr1"

struct RedirectRequest {
  uint32_t magic = kRedirectMagic;
  uint16_t family = 0;   // AF_INET or AF_INET6
  uint16_t port_be = 0;  // network byte order, as in sockaddr_in
  uint8_t address[16] = {};
};

enum RedirectVerdict : int32_t {
  kRedirectDirect = 0,  // connect as the program asked
  kRedirectCarry = 1,   // connect to 127.0.0.1:port_be instead
  kRedirectRefuse = 2,  // fail the connect with ECONNREFUSED (a relay refused us)
};

struct RedirectReply {
  int32_t verdict = kRedirectDirect;
  uint16_t port_be = 0;
  uint16_t reserved = 0;
};

}  // namespace artune::relay
