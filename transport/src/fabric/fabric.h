// The fabric interface: the few verbs-shaped operations the protocol layer needs,
// implemented once per fabric (tcp/ now, verbs/ in issue 3).
//
//   memory registration   Register(addr, len) -> lkey (and a region-wide rkey that is
//                         never handed to a peer).
//   offers                Endpoint::Expose(addr, len, lkey) -> an offer key: that
//                         endpoint's peer, and no other, may READ exactly that range
//                         until Endpoint::Revoke (or the endpoint closes). Every other
//                         read fails with one status that tells nothing about why.
//   two-sided send/recv   PostSend(sgl) delivers one message into the next receive
//                         buffer the peer pre-posted with PostRecv. A message larger
//                         than that buffer, or a send with no buffer posted, breaks
//                         the connection (verbs: RNR / length error), so the protocol
//                         layer runs credit-based flow control on top.
//   one-sided read        PostRead copies a remote registered region into a local
//                         registered buffer without the peer's protocol layer.
//   completions           delivered to the endpoint's CompletionHandler on the
//                         fabric's progress thread (busy-poll or event mode).
//
// No stream semantics: message boundaries are preserved, and nothing here promises
// more ordering than verbs RC does (sends arrive in order; a read completes after
// earlier sends on the same endpoint were posted, not necessarily delivered).
//
// Threading: Fabric and Endpoint methods are thread-safe. The CompletionHandler runs
// on the progress thread only, one completion at a time per fabric; it may call
// Post* on any endpoint (they never block on the network) but must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "artune/status.h"
#include "artune/transport/config.h"

namespace artune::transport::fabric {

struct MemoryKeys {
  uint32_t lkey = 0;  // names the region in local operations (Expose, PostRecv, PostRead)
  uint32_t rkey = 0;  // the region's own remote key: never announced (offers have theirs)
};

// One scatter/gather entry of a send: bytes in registered memory (lkey), or any
// memory when the fabric copies (the tcp fabric accepts lkey 0).
struct SgEntry {
  const std::byte* addr = nullptr;
  uint64_t length = 0;
  uint32_t lkey = 0;
};

struct RemoteRegion {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;
};

enum class CompletionKind {
  kRecv,          // a message landed in a posted receive buffer (wr_id of the PostRecv)
  kRead,          // a PostRead finished (ok or failed: status)
  kDisconnected,  // the endpoint is closed; delivered once, after every pending read
                  // and receive was completed with an error. No completion follows.
};

struct Completion {
  CompletionKind kind = CompletionKind::kRecv;
  uint64_t wr_id = 0;
  uint64_t length = 0;  // kRecv: bytes received
  Status status;        // non-ok: the operation failed (kDisconnected: why)
};

// True when [addr, addr + length) is non-empty and lies inside the region
// [base, base + region_length); written so that no sum can overflow (the values
// may come from a caller that got them wrong). Every fabric's Expose checks it.
inline bool OfferFitsRegion(const void* addr, uint64_t length, const void* base,
                            uint64_t region_length) {
  const auto start = reinterpret_cast<uintptr_t>(base);
  const auto at = reinterpret_cast<uintptr_t>(addr);
  return base != nullptr && length != 0 && at >= start && length <= region_length &&
         at - start <= region_length - length;
}

class Endpoint;
using CompletionHandler = std::function<void(Endpoint& endpoint, const Completion& completion)>;

// One connection to one peer (a verbs RC queue pair). Shared ownership: the fabric
// keeps it until kDisconnected was delivered, the protocol layer while it uses it.
class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Must be called once before any completion can be delivered. Posts made before
  // Start are allowed (receive buffers must be posted before the peer may send).
  virtual void Start(CompletionHandler handler) = 0;

  // Sends one message. The sgl memory may be reused as soon as PostSend returns (the
  // fabric sends or copies it first). kUnavailable once the endpoint is closed.
  virtual Status PostSend(std::span<const SgEntry> sgl) = 0;
  // Posts a receive buffer (registered, lkey) for the next incoming message.
  virtual Status PostRecv(std::byte* addr, uint64_t length, uint32_t lkey, uint64_t wr_id) = 0;
  // Offers [addr, addr + length), which must lie inside a region registered under
  // `lkey`, to this endpoint's peer for one-sided reads, until Revoke(key) or the
  // endpoint closes. The key is unguessable and names the offer on this endpoint
  // only; reads must fall inside the range. Errors: kInvalidArgument (the range is
  // not inside a registered region), kResourceExhausted, kUnavailable (closed).
  virtual Result<uint32_t> Expose(const std::byte* addr, uint64_t length, uint32_t lkey) = 0;
  // Withdraws an offer. `revoked` runs (and is then destroyed) once no read of the
  // offer can succeed any more: the memory may be reused from then on. tcp: before
  // Revoke returns (a read response being written out sends zeros for the rest);
  // verbs: when the window's invalidation completed, on the progress thread, or
  // when the endpoint is gone. It must not call back into this endpoint. Unknown
  // keys: `revoked` runs at once.
  virtual void Revoke(uint32_t key, std::function<void()> revoked) = 0;
  // Reads `remote` into local registered memory at `local` (remote.length bytes).
  // The local memory must stay valid until the kRead completion for wr_id. The
  // peer drops a connection with more reads in flight than it allows (tcp: one
  // per wire::kMinChunkBytes of each of its offers, plus
  // wire::kReadResponsesBeyondOffers; shm: 8192 it copies or granted).
  virtual Status PostRead(const RemoteRegion& remote, std::byte* local, uint32_t lkey,
                          uint64_t wr_id) = 0;

  // Closes the connection: pending operations complete with errors, then
  // kDisconnected (with `why`) is delivered on the progress thread.
  virtual void Close(Status why) = 0;
  // "127.0.0.1:50123" or a device/QP description, for error messages.
  virtual std::string peer() const = 0;
};

// Called on the progress thread for each accepted connection, with the private data
// the client sent. Return an error to refuse (the connection is closed).
using AcceptHandler = std::function<Status(std::shared_ptr<Endpoint> endpoint,
                                           std::span<const std::byte> private_data)>;

class Fabric {
 public:
  virtual ~Fabric() = default;

  virtual FabricKind kind() const = 0;

  // Registers [addr, addr + length). Errors: kInvalidArgument (empty range),
  // kResourceExhausted.
  virtual Result<MemoryKeys> Register(std::byte* addr, uint64_t length) = 0;
  // After it returns no fabric operation touches the region any more (an emulated
  // read still being written out sends zeros in its place).
  virtual void Deregister(const MemoryKeys& keys) = 0;

  // Server side: starts accepting on `host` (port chosen by the system); returns
  // the endpoint description a client passes to Connect ("host:port" for tcp).
  virtual Result<std::string> Listen(const std::string& host, AcceptHandler on_accept) = 0;
  // Server side, before Listen: admit only connections of this process's user and
  // root, checked at accept (a loopback server without a token; credentials.h).
  // tcp looks the peer up with sock_diag, shm always checks SO_PEERCRED; verbs
  // cannot tell a peer's user, so there the one-time ticket is the only check.
  virtual void AdmitOwnUserOnly() {}
  // Client side: connects and sends `private_data` (<= 256 bytes).
  virtual Result<std::shared_ptr<Endpoint>> Connect(const std::string& endpoint,
                                                    std::span<const std::byte> private_data) = 0;

  // How the progress thread waits for completions from now on: a live knob, so a
  // sweep's trial (or `apply config --live`) switches it without a restart. The
  // thread takes the new mode at its next pass (a sleeping one is woken). Any thread.
  virtual void SetPolling(PollingMode mode) = 0;
  // PollingMode::kAdaptive: how long the progress thread spins after its last
  // completion before it sleeps. A live knob too. Fabrics that sleep in adaptive
  // mode as in event mode ignore it.
  virtual void SetPollSpin(uint32_t /*spin_us*/) {}

  // Closes every endpoint and joins the progress thread. Idempotent.
  virtual void Shutdown() = 0;

  // Caller-driven progress (as UCX's ucp_worker_progress): a thread waiting for
  // its own completion in busy polling runs the progress pass itself instead of
  // waiting for the progress thread to wake it, which saves a thread hand-off per
  // call. Between BeginCallerPolling and EndCallerPolling the fabric's own thread
  // stands aside (in busy polling it would only compete for the same cores);
  // Poll runs one non-blocking pass on the calling thread when no other thread is
  // in one and returns whether it completed anything. Completions keep their
  // rule: one at a time per fabric, whichever thread runs them. A fabric without
  // caller-driven progress returns false (the caller then waits as before).
  // EndCallerPolling(hand_over): true when the caller leaves with its completion
  // still to come, so the fabric's thread must take over at once; false (its call
  // is done) lets the thread notice on its own a little later (kParkRecheck to
  // kParkRecheckLongest), so a loop of calls does not pay a futex wake and a
  // context switch per call.
  virtual bool caller_polling() const { return false; }
  virtual void BeginCallerPolling() {}
  virtual void EndCallerPolling(bool /*hand_over*/) {}
  virtual bool Poll() { return false; }
  // Event polling's caller-driven progress: a pass on the calling thread that may
  // sleep up to timeout_ms for events, so the kernel wakes the caller itself when
  // its reply comes (one wake-up, not the fabric's thread's and then the
  // caller's). Between Begin/EndCallerPolling like Poll. Returns whether it ran
  // a pass: false at once when another thread runs one (the progress thread
  // about to park, or another caller asleep in it) or `finished` is set (the
  // call completed meanwhile); the caller then waits on its own completion for a
  // moment and tries again. Only where caller_waiting(); the others leave an
  // event-polling caller asleep until their thread completes its call.
  virtual bool caller_waiting() const { return false; }
  virtual bool WaitPass(int /*timeout_ms*/, const std::atomic<bool>& /*finished*/) { return false; }
};

// How often a progress thread parked by polling callers looks whether they have
// all left (those whose call is done leave without waking it): first after
// kParkRecheck, then twice as long each time they are still there, up to
// kParkRecheckLongest (CallerPollingGate::Park). Bounds the delay of completions
// nobody waits for synchronously, right after a call loop ends.
inline constexpr std::chrono::microseconds kParkRecheck{200};
inline constexpr std::chrono::microseconds kParkRecheckLongest{1600};
// How often a parked progress thread runs a pass of its own anyway: deadlines and
// accepts go on even while a caller is stuck somewhere other than Poll.
inline constexpr std::chrono::milliseconds kParkedPassEvery{10};

// The fabric for `kind` (kAuto resolved by ResolveFabricKind), set up from
// `config` (polling; the verbs_* knobs for verbs). kVerbs without a usable device:
// kUnavailable naming why.
Result<std::unique_ptr<Fabric>> MakeFabric(FabricKind kind, const Config& config);

// Resolves kAuto to the fabric MakeFabric would build: verbs when some verbs device
// has an ACTIVE port, tcp otherwise. (A server with auto also listens on shm and a
// client with auto on its host connects there: server.cc, client.cc.)
FabricKind ResolveFabricKind(FabricKind kind);
std::string_view FabricKindName(FabricKind kind);

}  // namespace artune::transport::fabric
