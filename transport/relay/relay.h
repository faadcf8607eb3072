// artune's relay: carries unmodified programs' TCP connections over the embedded
// transport (DESIGN.md, "Reaching the user's program"; issue 22).
//
// Two roles, one class:
//   target  `artune relay`: a transport server that accepts carried connections
//           from other relays and dials, for each, the TCP address the program
//           dialled, which must be an address of this host (never an open proxy).
//   origin  `artune run`: answers the interposer (redirect.cc) on a unix socket:
//           for a destination whose host runs a relay (HOST:relay_port answers), a
//           loopback port whose connections are carried there; otherwise "direct".
// Bytes move both ways as Data calls (relay_wire.h), each gRPC message's payload a
// slice of its own; per connection and direction at most `window` bytes are in
// flight or queued (the receiver acknowledges what it wrote), so a slow reader
// stops the sender and memory stays bounded. What a socket does not take at once
// waits in the Data request's own memory (Message::Share: the transport server's
// registered blocks, no copy), up to `held_limit` bytes of such memory in all;
// past it the rest is copied to the heap. Half-close and resets pass through.
// A peer relay whose connection is lost, or that answers no Ping (every 250 ms) for
// 5 s, resets every connection carried through it, so the program's calls fail
// instead of hanging; a slow ping alone does not.
// Knobs: each link's transport server decides its protocols (the handshake gives
// the server's values to both ends), so the target relay (the one beside the
// program's server, started with `listen`) holds the knobs of both directions: at
// connect, and whenever its server's live knobs change (`artune apply config --live`
// on its address), it pushes them to the origin's return-path server. An origin's
// own knobs govern only what is fixed when a transport starts (fabric, verbs_*).
//
// Threading: one event-loop thread owns every socket and connection, under a
// lock it holds except while waiting; transport handlers and call completions
// queue events for it, except that a Data handler finding the lock free writes an
// in-order chunk to the socket itself, straight from the transport's memory (no
// transport call from there). The loop never waits on a peer: what can (a dial, a
// handshake again, a push of knobs: up to the 10 s control deadline when the peer
// hangs) runs on a thread of its own and posts its outcome back, and what needs
// that peer waits meanwhile, so one stopped peer delays no other peer's connections.
// counters() and Shutdown() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "artune/status.h"
#include "artune/transport/transport.h"

namespace artune::relay {

struct RelayOptions {
  transport::Config config;
  transport::Credentials credentials;
  // Target role: the transport server's HOST:PORT ("" for an origin-only relay,
  // which starts servers for the return path as it needs them).
  std::string listen;
  // Origin role: the port where other hosts' relays listen, and the unix socket
  // the interposer asks ("" for none).
  uint16_t relay_port = 0;
  std::string control_socket;
  // Per-connection, per-direction bytes in flight or queued at the receiver.
  uint64_t window = 16u << 20;
  // Request memory the relay keeps for its queues, all connections together,
  // counted as Message::Share says it pins (twice the bytes, plus 256 B per
  // slice): a quarter of the transport's allocator limit (2 GiB per server), so
  // held requests never starve the transport of memory for new ones.
  uint64_t held_limit = 512u << 20;
  // One line per notable event (a refused peer, a dead relay), for stderr.
  std::function<void(const std::string&)> log;
};

struct RelayCounters {
  uint64_t connections = 0;  // carried connections opened (either role)
  uint64_t bytes = 0;        // stream bytes carried, both directions
  // Stream bytes the Data handler did not write to the socket at once (they
  // waited for the socket or for the loop), and of those the bytes copied to wait
  // (past held_limit; the rest waited in the request's own memory); the request
  // memory held for waiting bytes now (held_limit's count).
  uint64_t queued_bytes = 0;
  uint64_t copied_bytes = 0;
  uint64_t held_bytes = 0;
  // The transport's slices and bytes of this relay's links, both directions.
  transport::ProtocolStats by_protocol[transport::kProtocolCount];
};

class Relay {
 public:
  // Starts the server (target role) and the control socket (origin role) and the
  // event loop. Errors: the server's (kInvalidArgument for a non-loopback address
  // without a token, kUnavailable when the port is taken), kIoError for the socket.
  static Result<std::unique_ptr<Relay>> Start(RelayOptions options);
  virtual ~Relay() = default;

  // The target server's address ("" without one), its fabric.
  virtual std::string address() const = 0;
  virtual std::string fabric() const = 0;
  virtual RelayCounters counters() const = 0;
  // Resets every carried connection, stops the servers and joins the loop.
  virtual void Shutdown() = 0;
};

// Whether `host` (a numeric address) is an address of this host: loopback or one
// of its interfaces'.
bool IsLocalAddress(const std::string& host);

}  // namespace artune::relay
