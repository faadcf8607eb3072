// The embedded transport's public API: an AR-gRPC-style adaptive RPC transport.
//
// A Server registers handlers by method name and serves many Clients. gRPC is the
// control plane (handshake, config negotiation, stats, live reconfiguration); the
// payload moves over a Fabric (tcp everywhere, verbs where an RDMA device exists),
// by the protocol protocol.h chooses for each slice.
//
// Threading: Server and Client are thread-safe; any number of threads may call
// Client::Call / CallAsync at once. Handlers run on the server's worker threads and
// may run concurrently for different calls.
//
// Errors: every call returns Status/Result (status.h). What the caller does:
//   kTimeout           the call's deadline passed; the call is abandoned (a late
//                      response is dropped). Retry or raise the timeout.
//   kUnavailable       the peer went away or the connection broke; every call in
//                      flight on that connection fails with it. Connect again.
//   kProtocolError     the peer sent malformed or oversized data; the connection is
//                      closed. The server keeps serving its other clients.
//   kNotFound          no handler for the method on the server.
//   kResourceExhausted an allocation past the allocator's limit.
//   kInvalidArgument   a bad config or argument; nothing was sent.
//   kPermissionDenied  the server wants a token this client lacks, or another one.
//
// Trust (issue 16): a peer reads only the bytes a call offered it, on that
// connection, until that call's FIN (fabric.h, Endpoint::Expose): over tcp the
// server checks every read against its per-connection offers; over verbs a type-2
// memory window per offer makes the HCA check it. On a verbs device without type-2
// windows the HCA can only check the region's key, so a peer that learned one key
// of a registered region could read all of it; and Soft-RoCE bounds window reads by
// the region, not the window (verbs_fabric.h, README).
//   (a handler's own error status is returned to the caller as is)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/transport/credentials.h"
#include "artune/transport/protocol.h"

namespace artune::transport {

using ConstSlice = std::span<const std::byte>;

namespace internal {
// The engine's access to what applications do not see (transport/src/engine_access.h).
struct EngineAccess;
class MessageRecycler;
}  // namespace internal

// A block of registered memory from a transport's allocator. Move-only; returns its
// memory to the allocator when destroyed. Slices pointing into a Buffer are sent
// without a copy (rendezvous reads them in place). The Buffer must outlive every
// call that uses it.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<std::byte> span() const { return {data_, size_}; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  friend struct internal::EngineAccess;
  // What gives the memory back: the allocator's pool (defined in the engine).
  struct Owner;
  Buffer(std::byte* data, size_t size, std::shared_ptr<Owner> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}

  std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<Owner> owner_;
};

// Hands out registered buffers. Thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // kResourceExhausted past the allocator's limit; kInvalidArgument for size 0.
  virtual Result<Buffer> Allocate(size_t size) = 0;
};

// A received message: its slices, in the order the sender gave them. It owns the
// memory its slices point to; they stay valid while the Message lives.
class Message {
 public:
  Message() = default;
  Message(Message&&) noexcept = default;
  Message& operator=(Message&& other) noexcept;
  ~Message();

  size_t slice_count() const { return slices_.size(); }
  ConstSlice slice(size_t i) const { return slices_[i]; }
  const std::vector<ConstSlice>& slices() const { return slices_; }
  uint64_t total_bytes() const;

  // A second hold of this message's memory, without a copy: the same slices, and a
  // share of what owns them, so the bytes stay valid and unchanged while either
  // Message lives. This is how a handler keeps its request past its return (its
  // `request` goes back to the transport then), or a caller a response it
  // hands on. Thread-safety: like any const method (concurrent Share()s and
  // reads are fine); the copy belongs to the caller and may go to another thread.
  //
  // What it pins: the blocks of the allocator of the Server (a request) or Client
  // (a response) that received the message, never a fabric's own memory: every
  // fabric's receive path (tcp and verbs receive buffers, the shm ring) copies
  // eager bytes out into such a block before the message is complete, and
  // rendezvous reads land in one. So a held message blocks no later read on its
  // connection. The blocks are power-of-two classes of at least 256 B: at most
  // twice the message's bytes plus 256 B per slice. Held blocks count against the
  // allocator's limit (2 GiB per Server or Client), and a held block of 256 KiB
  // to 1 MiB keeps its 2 MiB slab from being given back: a holder keeps what it
  // holds bounded (the relay: RelayOptions::held_limit), or later messages of
  // every connection of that server fail with kResourceExhausted.
  Message Share() const {
    Message held;
    held.slices_ = slices_;
    held.storage_ = storage_;
    return held;
  }

 private:
  friend struct internal::EngineAccess;
  std::vector<ConstSlice> slices_;
  std::vector<std::shared_ptr<void>> storage_;
  // A received message's: where its lists' room goes when it ends, for the
  // connection's next message (no allocation per message). Shared: the message
  // may outlive its connection.
  std::shared_ptr<internal::MessageRecycler> recycler_;
};

// What a handler fills in. Append() of a slice that lies in memory from the
// server's allocator (or in the request) is sent zero-copy; other memory is copied.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // `slice` must stay valid until the handler returns (request slices do).
  virtual void Append(ConstSlice slice) = 0;
  // Hands a buffer over; the transport keeps it until the response is sent.
  virtual void Append(Buffer buffer) = 0;
  virtual Allocator& allocator() = 0;
};

using Handler = std::function<Status(const Message& request, ResponseWriter& response)>;

struct HandlerOptions {
  // The handler never blocks (no waiting on locks held long, I/O or other
  // calls): with handler_inline = auto it runs on the fabric's progress thread,
  // saving a thread hand-off per call. A blocking handler declared so would stall
  // every connection of the server while it blocks.
  bool non_blocking = false;
};

struct CallOptions {
  // 0: the config's timeout_ms. Not for one-way calls (they have no deadline).
  std::chrono::milliseconds timeout{0};
  // A one-way call: the server runs the handler and sends no response, so no
  // packet comes back per call (the relay's Data, whose sender acts on failures
  // only). The server reports one-way calls handled in batches (half of
  // max_outstanding, or with any packet it sends): `done` runs with an empty
  // Message then (calls are counted, not named: the oldest whose request the
  // server has), or with the error when the connection fails first. The request
  // and the call slot are held until then, so at most max_outstanding requests
  // are ever queued at the server. A handler's error closes the connection (there
  // is nobody else to tell): the client's calls on it fail. A server of an older
  // wire version is refused at the handshake.
  bool one_way = false;
};

// Per-protocol counters: messages (slices) and bytes, in log2 size buckets.
struct ProtocolStats {
  uint64_t slices = 0;
  uint64_t bytes = 0;
  uint64_t slices_by_bucket[kLog2BucketCount] = {};
};
struct Stats {
  ProtocolStats by_protocol[kProtocolCount];
  uint64_t calls_started = 0;
  uint64_t calls_completed = 0;
  uint64_t calls_failed = 0;
  uint64_t connections_accepted = 0;
  uint64_t connections_dropped = 0;  // broken (closed under a call) or protocol errors
  // shm fabric rendezvous reads in this process (all its servers and clients): by
  // process_vm_readv (one copy), or copied by the owner through the ring because
  // process_vm_readv was refused (no ptrace rights: shm_one_copy_refused counts the
  // connections that fell back) or ARTUNE_SHM_CMA=0.
  uint64_t shm_reads_one_copy = 0;
  uint64_t shm_reads_owner_copy = 0;
  uint64_t shm_one_copy_refused = 0;
  // CPU time (user and system) the serving process has used since it started, so a
  // client measuring against it can say what the calls cost the other side too
  // (`artune bench --peer`). 0 from a peer of an earlier version.
  uint64_t process_cpu_ns = 0;
};

class Server {
 public:
  virtual ~Server() = default;
  // Binds the control plane to `listen_address` ("host:port"; port 0 picks one) and
  // the fabric's data endpoint, and starts serving. Handlers may be registered
  // before or after Start. With a token in `credentials` every control call and
  // data connection is authenticated (credentials.h); an address beyond loopback
  // without one is refused (kInvalidArgument, saying where the token goes), and a
  // loopback server without one serves its own user and root only (credentials.h).
  // The overload without credentials takes CredentialsFromEnvironment().
  // Raises the process's soft RLIMIT_NOFILE to the hard limit first
  // (RaiseDescriptorLimit). The control plane's connections are capped, paused on
  // descriptor exhaustion and closed when idle (control_listener.h).
  static Result<std::unique_ptr<Server>> Start(const Config& config,
                                               const std::string& listen_address);
  static Result<std::unique_ptr<Server>> Start(const Config& config,
                                               const std::string& listen_address,
                                               const Credentials& credentials);

  virtual void RegisterHandler(const std::string& method, Handler handler,
                               HandlerOptions options) = 0;
  void RegisterHandler(const std::string& method, Handler handler) {
    RegisterHandler(method, std::move(handler), HandlerOptions{});
  }
  // The control-plane address clients connect to (with the real port).
  virtual std::string address() const = 0;
  // The fabric's data listener as the handshake tells clients ("host:port" for tcp,
  // ":port" when listening on every address, the rdma_cm address for verbs).
  virtual std::string data_endpoint() const = 0;
  // The same-host shared-memory listener a server with fabric = auto also runs
  // (clients on this host, network namespace and user connect there); "" when none.
  virtual std::string local_endpoint() const = 0;
  virtual FabricKind fabric() const = 0;
  // New knob values for new messages; calls in flight finish under the old values.
  // Only the live knobs (Knob::live) change: polling at the progress thread's next
  // pass, the rest for new messages. The fabric, idle_timeout_ms and verbs_* knobs a running
  // server keeps (a request to change them is ignored when it comes from a client,
  // whose values of those are its own, and refused when given here).
  virtual Status Reconfigure(const Config& config) = 0;
  virtual Config config() const = 0;
  virtual Stats stats() const = 0;
  // Counters the control plane's GetStats (QueryServerStats, `artune dashboard
  // --server`) adds to this server's own: by_protocol and calls_*; stats() stays
  // this server's alone. For a program whose traffic this server carries one way
  // and its clients the other (`artune relay`), so a watcher sees both. `source`
  // runs on a control-plane thread, must be thread-safe and outlive the server (or
  // be replaced with an empty function before it goes).
  virtual void SetExtraStats(std::function<Stats()> source) = 0;
  virtual Allocator& allocator() = 0;
  // Stops accepting, fails calls in flight with kCancelled, joins all threads.
  virtual void Shutdown() = 0;
};

class Client {
 public:
  virtual ~Client() = default;
  // Handshakes with the server at `server_address` over the control plane (wire
  // version, config negotiation: the server's knob values win for both ends) and
  // opens the fabric connection.
  // A server with a token refuses a client without it: kPermissionDenied. The
  // overload without credentials takes CredentialsFromEnvironment().
  static Result<std::unique_ptr<Client>> Connect(const Config& config,
                                                 const std::string& server_address);
  static Result<std::unique_ptr<Client>> Connect(const Config& config,
                                                 const std::string& server_address,
                                                 const Credentials& credentials);

  // Synchronous call. Request slices must stay valid until it returns.
  virtual Result<Message> Call(std::string_view method, std::span<const ConstSlice> request,
                               CallOptions options = {}) = 0;
  // Asynchronous call: `done` runs exactly once, on a transport thread, with the
  // response or the error. Request slices must stay valid until `done` runs. At most
  // max_outstanding calls are in flight; further calls wait for a slot.
  using Done = std::function<void(Result<Message>)>;
  virtual void CallAsync(std::string_view method, std::span<const ConstSlice> request,
                         CallOptions options, Done done) = 0;
  // CallAsync that never waits: not for a call slot, nor for the handshake a call
  // does first when RefreshDue(). Then it returns false at once, and `done` is left
  // as it was (moved from only when it returns true). For an event loop that must
  // not block, such as the relay's: it keeps the call and tries again when one of
  // its calls completes, or after running Refresh() on another thread.
  virtual bool TryCallAsync(std::string_view method, std::span<const ConstSlice> request,
                            CallOptions options, Done&& done) = 0;
  // Whether the next call first handshakes with the server again over the control
  // plane (up to its 10 s deadline; a new data connection too): the server was
  // reconfigured, the connection closed, or it was quiet long enough that the
  // server's idle watch may close it.
  virtual bool RefreshDue() const = 0;
  // That handshake, when due (Ok at once otherwise); what CallAsync does first.
  // Errors: the handshake's (kUnavailable, kTimeout, kPermissionDenied).
  virtual Status Refresh() = 0;

  // Pushes new knob values to the server through the control plane; both ends use
  // them for new messages, calls in flight finish under the old values. Live knobs
  // only (Knob::live): each end keeps its own fabric, idle_timeout_ms and verbs_* values.
  virtual Status Reconfigure(const Config& config) = 0;
  // The config both ends agreed on.
  virtual Config config() const = 0;
  virtual FabricKind fabric() const = 0;
  virtual Stats stats() const = 0;
  virtual Result<Stats> ServerStats() = 0;
  virtual Allocator& allocator() = 0;
};

// Raises this process's soft RLIMIT_NOFILE to its hard limit (1024 is the usual
// soft default, far below what a server with many peers needs; the hard limit is
// what the administrator allows). Server::Start calls it, and so does artune's
// main. Idempotent and thread-safe; kIoError when setrlimit refuses.
Status RaiseDescriptorLimit();

// The counters of the server at `address` over the control plane alone, without a
// data connection (a dashboard's poll). Errors: kUnavailable (nobody answered
// within `deadline`), kPermissionDenied (the server wants another token).
Result<Stats> QueryServerStats(const std::string& address, std::chrono::milliseconds deadline,
                               const Credentials& credentials);

}  // namespace artune::transport
