// The control plane's listening socket and accept loop, owned here instead of by
// gRPC (issue 26, 1): gRPC 1.51's listener closes itself for good after one
// accept4 fails with EMFILE, so one peer holding a thousand idle connections took
// the control port down until restart. Here:
//   * the control port never takes the process's last descriptors: a connection
//     accepted into one of the last DescriptorReserve() below the soft limit is
//     closed at once, and accepting pauses as when out of descriptors. The rest of
//     the server (gRPC, the data plane, the store, its logs) keeps descriptors to
//     work with however many peers knock on the control port;
//   * out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM), accepting pauses with
//     a back-off (50 ms doubling to 1 s; no spin, no death) and resumes by itself;
//   * connections are capped per listener (ControlConnectionCap) and per peer
//     address (ControlConnectionsPerPeer: half of that), so that one peer
//     holding connections open, silent or trickling, cannot fill the listener;
//     past a cap a connection is closed at once and the refusal logged
//     (refusal_log.h);
//   * a loopback server without a token admits only its own user's (and root's)
//     connections, checked at accept (peer_credentials.h, credentials.h);
//   * each admitted descriptor goes to gRPC through an external connection
//     acceptor (ServerBuilder::experimental().AddExternalConnectionAcceptor), which
//     also speaks TLS when the server credentials ask for it.
// ApplyControlPlaneLimits bounds what gRPC does with them: the request size
// (checked before a request is parsed or authenticated), the time to finish the
// HTTP/2 handshake and the time a connection may stay idle.
//
// Threading: Bind and Start on one thread; the accept loop runs on its own thread
// until Stop (or the destructor), which joins it. Errors are returned, never thrown.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "artune/status.h"

namespace artune::transport {

// The largest control request a server reads: a Handshake or Reconfigure carries
// one Knobs message (11 varints, under 150 bytes); 4 KiB leaves room for new knobs.
inline constexpr int kMaxControlRequestBytes = 4096;
// A connection must finish the HTTP/2 handshake (and TLS) within this time.
inline constexpr int kControlHandshakeTimeoutMs = 10'000;
// A connection with no call for this long is closed (clients reconnect by themselves).
inline constexpr int kControlIdleTimeoutMs = 60'000;

// The port of "host:port" (0 to 65535; kInvalidArgument otherwise).
Result<uint16_t> ParseListenPort(const std::string& listen_address);

// Request size, handshake timeout and idle timeout of the control plane's gRPC
// server (see above).
void ApplyControlPlaneLimits(grpc::ServerBuilder& builder);

// Connections one control listener holds at most: 256, or fewer when the soft
// RLIMIT_NOFILE leaves less (a quarter of what exceeds a reserve of 128, at least 8).
size_t ControlConnectionCap();

// Connections one peer address holds at most on a listener of `listener_cap`: half
// (at least 4), so that no peer fills the listener alone. Not less: `bench
// --clients 64` on one host opens a control connection per client when they use
// TLS (gRPC shares one connection only between channels with equal credentials,
// which TLS credentials never are), and other tools of that host need some too.
size_t ControlConnectionsPerPeer(size_t listener_cap);

// Descriptors below the soft RLIMIT_NOFILE that the control listener leaves to the
// rest of the process: 128, or a quarter of the limit when that is smaller.
size_t DescriptorReserve();

// Whether `fd`, just returned by accept4 (the lowest free number), leaves fewer
// than DescriptorReserve() descriptors free below the soft limit.
bool TakesFromTheReserve(int fd);

class ControlListener {
 public:
  struct Options {
    size_t max_connections = 256;
    // Admit only connections of this process's user and root (a loopback server
    // without a token).
    bool own_user_only = false;
  };

  // Binds and listens on `host`:`port` ("" or 0.0.0.0: every IPv4 interface; "::"
  // every interface; port 0 picks one). Accepts nothing before Start. kUnavailable
  // when the address is taken or not local, kInvalidArgument for a bad address.
  static Result<std::unique_ptr<ControlListener>> Bind(const std::string& host, uint16_t port,
                                                       const Options& options);
  ~ControlListener();
  ControlListener(const ControlListener&) = delete;
  ControlListener& operator=(const ControlListener&) = delete;

  uint16_t port() const { return port_; }

  // Starts the accept loop; each admitted connection goes to `acceptor`, from a
  // server already started (connections handed before that would be closed).
  void Start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor);

  // Stops accepting and closes the listening socket (connections already handed
  // to gRPC are gRPC's). Idempotent.
  void Stop();

 private:
  ControlListener(int listen_fd, int stop_fd, uint16_t port, const Options& options);
  void AcceptLoop();
  // Waits until the listener is readable or Stop is called (then false), for at
  // most `timeout_ms` (-1: no limit).
  bool WaitReadable(int timeout_ms);
  // Logs `why` and waits out the next back-off step (`pause_ms` doubles from
  // 50 ms to 1 s); false when Stop was called meanwhile.
  bool PauseAccepting(int& pause_ms, const std::string& why);
  // Admits `fd` (then hands it to gRPC) or closes it with a logged refusal.
  void Admit(int fd);
  // The handed connections from `peer` (PeerHost) still counted.
  size_t ConnectionsOf(const std::string& peer) const;
  // Forgets connections gRPC has closed since they were handed over.
  void ForgetClosedConnections();

  int listen_fd_;      // -1 once Stop closed it
  const int stop_fd_;  // eventfd: written by Stop
  const uint16_t port_;
  const Options options_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  // The connections handed to gRPC (accept thread): a descriptor is still one of
  // them while it names the same socket inode.
  struct Handed {
    int fd;
    uint64_t inode;
    std::string peer;  // its address without the port (PeerHost)
  };
  std::vector<Handed> handed_;
};

}  // namespace artune::transport
