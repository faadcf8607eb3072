// Client (transport.h): handshake over the control plane, one data connection per
// buffer geometry, call slots (max_outstanding) and deadlines.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>

#include "allocator.h"
#include "artune/transport/credentials.h"
#include "artune/transport/knobs.h"
#include "connection.h"
#include "control.grpc.pb.h"
#include "control_codec.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/spin_governor.h"
#include "stats.h"
#include "timer.h"
#include "wire.h"

namespace artune::transport {
namespace {

constexpr std::chrono::seconds kControlDeadline{10};

Status FromGrpc(const grpc::Status& status, std::string_view what) {
  const std::string message = std::string(what) + ": " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::Unsupported(message);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Timeout(message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:  // the server is full now
      return Status::Unavailable(message);
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status::PermissionDenied(message);
    default:
      return Status::Unavailable(message);
  }
}

// TLS when the credentials name a CA to trust, else plain TCP.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Credentials& credentials) {
  if (!credentials.client_tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = credentials.tls_ca_pem;
  return grpc::SslCredentials(tls);
}

// A pause in a spin loop: lets the sibling hyperthread run and saves power.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A synchronous call's rendezvous with its completion.
struct CallWaiter {
  std::mutex mutex;
  std::condition_variable completed;
  std::atomic<bool> done{false};
  std::optional<Result<Message>> result;
};

enum class SpinOutcome { kDone, kSpinOver, kLostCpu };

class ClientImpl final : public Client {
 public:
  ClientImpl(std::shared_ptr<grpc::Channel> channel, std::string server_address, std::string token)
      : channel_(std::move(channel)),
        stub_(control::Control::NewStub(channel_)),
        server_address_(std::move(server_address)),
        token_(std::move(token)) {}

  ~ClientImpl() override {
    if (fabric_) fabric_->Shutdown();  // fails every call in flight
    timer_.reset();
    std::lock_guard lock(mutex_);
    current_.reset();
    retiring_.clear();
  }

  Status Init(const Config& requested) {
    ARTUNE_ASSIGN_OR_RETURN(control::HandshakeResponse response, HandshakeRpc(requested));
    local_ = requested;
    Config agreed = KeepLocalKnobs(FromKnobs(response.knobs()));
    ARTUNE_RETURN_IF_ERROR(ValidateConfig(agreed).WithContext("config from the server"));
    // The server's fabric, from the wire: only a concrete one is valid.
    if (response.fabric() != static_cast<uint32_t>(FabricKind::kTcp) &&
        response.fabric() != static_cast<uint32_t>(FabricKind::kVerbs) &&
        response.fabric() != static_cast<uint32_t>(FabricKind::kShm)) {
      return Status::ProtocolError("server " + server_address_ + " runs fabric " +
                                   std::to_string(response.fabric()) +
                                   ", unknown here: use matching artune builds");
    }
    auto kind = static_cast<FabricKind>(response.fabric());
    data_endpoint_ = response.data_endpoint();
    if (!data_endpoint_.empty() && data_endpoint_[0] == ':') {
      data_endpoint_ = server_address_.substr(0, server_address_.rfind(':')) + data_endpoint_;
    }
    if (UseLocalEndpoint(requested, response)) {
      kind = FabricKind::kShm;
      data_endpoint_ = response.local_endpoint();
    }
    ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<fabric::Fabric> fabric,
                            fabric::MakeFabric(kind, agreed));
    fabric_ = std::move(fabric);
    allocator_ = std::make_unique<RegisteredAllocator>(fabric_, kAllocatorLimitBytes);
    timer_ = std::make_unique<Timer>();
    slots_ = std::make_shared<CallSlots>(agreed.max_outstanding);
    std::lock_guard lock(mutex_);
    ticket_ = response.data_ticket();
    server_idle_ms_ = response.idle_timeout_ms();
    return ApplyLocked(agreed, response.config_epoch());
  }

  Result<Message> Call(std::string_view method, std::span<const ConstSlice> request,
                       CallOptions options) override {
    // Busy polling: the caller runs the fabric's progress itself until its call
    // completes (no hand-off from the progress thread). Adaptive: the same for up
    // to poll_spin_us, then it sleeps until the progress thread completes the call;
    // on a busy host (fabric/spin_governor.h) it sleeps as event polling does.
    // Event: the caller sleeps in the fabric's own wait (WaitPass), so the kernel
    // wakes it when the reply comes, not the progress thread and then it.
    PollingMode polling;
    std::chrono::microseconds spin{0};
    {
      std::lock_guard lock(mutex_);
      polling = config_.polling;
      spin = std::chrono::microseconds(config_.poll_spin_us);
    }
    const auto started = polling == PollingMode::kAdaptive
                             ? std::chrono::steady_clock::now()
                             : std::chrono::steady_clock::time_point{};
    // A busy host: wait as event polling does (over verbs, which has no caller
    // wait, the caller sleeps until the fabric's thread completes the call).
    if (polling == PollingMode::kAdaptive && !fabric::SpinGovernor::Process().MaySpin(started)) {
      polling = PollingMode::kEvent;
    }
    // On this frame, not the heap: the completion runs exactly once (on this
    // thread in Poll, or on another: the progress thread, a deadline), and this
    // frame ends only after it has set `done` and released the mutex (the wait
    // below takes it). The completion captures one pointer, so the std::function
    // holds it without an allocation either (two heap allocations per call fewer).
    CallWaiter waiter_on_frame;
    CallWaiter* const waiter = &waiter_on_frame;
    // A fabric without caller-driven progress (fabric.h) completes the call on
    // its own thread: the caller sleeps there whatever the polling.
    const bool poll =
        polling == PollingMode::kEvent ? fabric_->caller_waiting() : fabric_->caller_polling();
    if (poll) fabric_->BeginCallerPolling();
    CallAsync(method, request, options, [waiter](Result<Message> outcome) {
      std::lock_guard lock(waiter->mutex);
      waiter->result.emplace(std::move(outcome));
      waiter->done.store(true, std::memory_order_release);
      waiter->completed.notify_one();
    });
    if (poll && polling == PollingMode::kEvent) {
      WaitInFabric(*waiter);
      fabric_->EndCallerPolling(false);
    } else if (poll) {
      const SpinOutcome outcome = SpinOnFabric(*waiter, polling, started + spin);
      if (outcome != SpinOutcome::kDone && fabric_->caller_waiting()) {
        // Adaptive past its spin, or its spin lost the core: sleep in the fabric's
        // wait for the rest of the call, as event polling does, rather than hand
        // the completion over to the progress thread (one wake-up instead of two,
        // each of which waits for a core on a busy host).
        WaitInFabric(*waiter);
        fabric_->EndCallerPolling(false);
      } else {
        // Adaptive past its spin: the fabric's thread must deliver the rest.
        fabric_->EndCallerPolling(!waiter->done.load(std::memory_order_acquire));
      }
    }
    std::unique_lock lock(waiter->mutex);
    waiter->completed.wait(lock, [&] { return waiter->done.load(std::memory_order_relaxed); });
    return std::move(*waiter->result);
  }

  // Event polling's wait: the caller sleeps in the fabric's own wait (or, while
  // another thread holds it, on the waiter) until its call completes.
  void WaitInFabric(CallWaiter& waiter) {
    // Bounded waits: a deadline's completion (timer thread) is seen within one.
    constexpr int kWaitSliceMs = 10;
    while (!waiter.done.load(std::memory_order_acquire)) {
      if (fabric_->WaitPass(kWaitSliceMs, waiter.done)) continue;
      // Another thread holds the pass: it may deliver this call (and notify).
      std::unique_lock lock(waiter.mutex);
      waiter.completed.wait_for(lock, std::chrono::microseconds(100),
                                [&] { return waiter.done.load(std::memory_order_relaxed); });
    }
  }

  // Busy and adaptive polling's spin: the caller runs the fabric's passes until
  // its call completes, or (adaptive) until `spin_until` or until the spin lost
  // its core (fabric/spin_governor.h). Busy never reads the clock here (a syscall
  // in the Soft-RoCE lab's guest); adaptive every 64 passes.
  SpinOutcome SpinOnFabric(CallWaiter& waiter, PollingMode polling,
                           std::chrono::steady_clock::time_point spin_until) {
    const bool adaptive = polling == PollingMode::kAdaptive;
    // Only idle passes are timed: a pass that delivered ran callbacks, whose time
    // is work, not a lost core.
    fabric::SpinWatch watch;
    bool progressed = false;
    uint32_t passes = 0;
    while (!waiter.done.load(std::memory_order_acquire)) {
      if (fabric_->Poll()) {
        progressed = true;
      } else {
        CpuRelax();
      }
      if (!adaptive || ++passes % 64 != 0) continue;
      const auto now = std::chrono::steady_clock::now();
      if (progressed) watch.Reset();
      progressed = false;
      if (watch.Observe(now)) return SpinOutcome::kLostCpu;
      if (now >= spin_until) return SpinOutcome::kSpinOver;
    }
    return SpinOutcome::kDone;
  }

  void CallAsync(std::string_view method, std::span<const ConstSlice> request, CallOptions options,
                 Done done) override {
    StartCall(method, request, options, done, /*wait_for_slot=*/true);
  }

  bool TryCallAsync(std::string_view method, std::span<const ConstSlice> request,
                    CallOptions options, Done&& done) override {
    return StartCall(method, request, options, done, /*wait_for_slot=*/false);
  }

  bool RefreshDue() const override {
    std::lock_guard lock(mutex_);
    return RefreshDueLocked();
  }

  Status Refresh() override { return RefreshIfStale(); }

  Status Reconfigure(const Config& config) override {
    ARTUNE_RETURN_IF_ERROR(ValidateConfig(config));
    control::ReconfigureRequest request;
    *request.mutable_knobs() = ToKnobs(config);
    control::HandshakeResponse response;
    grpc::ClientContext context;
    PrepareContext(context);
    grpc::Status status = stub_->Reconfigure(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, "reconfigure " + server_address_);
    Config agreed = KeepLocalKnobs(FromKnobs(response.knobs()));
    ARTUNE_RETURN_IF_ERROR(ValidateConfig(agreed).WithContext("config from the server"));
    std::lock_guard lock(mutex_);
    ticket_ = response.data_ticket();
    server_idle_ms_ = response.idle_timeout_ms();
    return ApplyLocked(agreed, response.config_epoch());
  }

  Config config() const override {
    std::lock_guard lock(mutex_);
    return config_;
  }
  FabricKind fabric() const override { return fabric_->kind(); }
  Stats stats() const override { return stats_.Snapshot(); }

  Result<Stats> ServerStats() override {
    control::StatsResponse response;
    grpc::ClientContext context;
    PrepareContext(context);
    grpc::Status status = stub_->GetStats(&context, control::StatsRequest(), &response);
    if (!status.ok()) return FromGrpc(status, "stats from " + server_address_);
    return FromProto(response);
  }

  Allocator& allocator() override { return *allocator_; }

 private:
  void PrepareContext(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() + kControlDeadline);
    if (!token_.empty()) context.AddMetadata(std::string(kTokenMetadataKey), token_);
  }

  Result<control::HandshakeResponse> HandshakeRpc(const Config& config) {
    control::HandshakeRequest request;
    request.set_wire_version(wire::kWireVersion);
    *request.mutable_knobs() = ToKnobs(config);
    control::HandshakeResponse response;
    grpc::ClientContext context;
    PrepareContext(context);
    grpc::Status status = stub_->Handshake(&context, request, &response);
    if (!status.ok()) {
      Status failed = FromGrpc(status, "handshake with " + server_address_);
      // A loopback server without a token closes other users' connections at once.
      if (failed.code() == ErrorCode::kUnavailable && token_.empty() &&
          IsLoopbackHost(server_address_.substr(0, server_address_.rfind(':')))) {
        return Status::Unavailable(failed.message() +
                                   " (is the server running, and as your user? A loopback "
                                   "server without a token serves only its own user and root)");
      }
      return failed;
    }
    if (response.wire_version() != wire::kWireVersion) {
      return Status::Unsupported("server " + server_address_ + " speaks wire version " +
                                 std::to_string(response.wire_version()) + ", this client " +
                                 std::to_string(wire::kWireVersion) +
                                 ": use matching artune builds");
    }
    return response;
  }

  // A server with fabric = auto offers shm to clients on its host: this client
  // takes it when it asked for auto (or shm) and shares the server's host
  // identity (same boot, network namespace and user; shm_fabric.h).
  static bool UseLocalEndpoint(const Config& requested,
                               const control::HandshakeResponse& response) {
    if (response.local_endpoint().empty()) return false;
    if (requested.fabric != FabricKind::kAuto && requested.fabric != FabricKind::kShm) return false;
    Result<std::string> identity = fabric::shm::HostIdentity();
    return identity.ok() && !response.local_identity().empty() &&
           fabric::shm::HostIdentityDigest(*identity, response.data_ticket()) ==
               response.local_identity();
  }

  // The server's packets carry its config epoch; a newer one means the server was
  // reconfigured: fetch the new values before the next call. A closed connection
  // (the server closes idle ones) is replaced the same way.
  // CallAsync and TryCallAsync: false (and `done` untouched) only when the caller
  // would not wait, and no slot was free or a refresh was due.
  bool StartCall(std::string_view method, std::span<const ConstSlice> request, CallOptions options,
                 Done& done, bool wait_for_slot) {
    std::shared_ptr<Connection> connection;
    Config config;
    Status refreshed = Status::Ok();
    if (wait_for_slot) refreshed = RefreshIfStale();
    {
      std::lock_guard lock(mutex_);
      if (!wait_for_slot && RefreshDueLocked()) return false;
      connection = current_;
      config = config_;
    }
    if (!refreshed.ok()) {
      done(refreshed);
      return true;
    }
    const auto timeout = options.timeout.count() > 0 ? options.timeout
                                                     : std::chrono::milliseconds(config.timeout_ms);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (!wait_for_slot && !slots_->TryAcquire()) return false;
    if (wait_for_slot && !slots_->Acquire(deadline)) {
      stats_.CallFailed();
      done(Status::Timeout("no call slot freed before the deadline (" +
                           std::to_string(config.max_outstanding) +
                           " calls in flight, max_outstanding); raise it or the timeout"));
      return true;
    }
    connection->StartCall(method, request, deadline, std::move(done), options.one_way, slots_);
    return true;
  }

  bool RefreshDueLocked() const {
    return current_->peer_epoch() > epoch_ || current_->closed() || ServerMayCloseLocked();
  }

  Status RefreshIfStale() {
    bool retire = false;
    {
      std::lock_guard lock(mutex_);
      // RefreshDueLocked with `retire` asked once: it takes the connection's mutex
      // (the progress thread's too) and reads the clock, once per call.
      retire = ServerMayCloseLocked();
      if (current_->peer_epoch() <= epoch_ && !current_->closed() && !retire) return Status::Ok();
    }
    ARTUNE_ASSIGN_OR_RETURN(control::HandshakeResponse response, HandshakeRpc(config()));
    Config agreed = KeepLocalKnobs(FromKnobs(response.knobs()));
    ARTUNE_RETURN_IF_ERROR(ValidateConfig(agreed).WithContext("config from the server"));
    std::lock_guard lock(mutex_);
    // Another caller may have replaced the connection meanwhile.
    retire = retire && ServerMayCloseLocked();
    if (response.config_epoch() <= epoch_ && !current_->closed() && !retire) return Status::Ok();
    ticket_ = response.data_ticket();
    server_idle_ms_ = response.idle_timeout_ms();
    return ApplyLocked(agreed, response.config_epoch(), /*new_connection=*/retire);
  }

  // The server closes a data connection quiet for its idle_timeout_ms, measured
  // from the same events (a call started or finished); a call sent just then would
  // fail. So a connection quiet for three quarters of it is replaced before the
  // next call: the server's close can then only meet a connection no call uses.
  bool ServerMayCloseLocked() const {
    if (server_idle_ms_ == 0 || current_->closed()) return false;
    return current_->QuietFor(std::chrono::milliseconds(server_idle_ms_ / 4 * 3));
  }

  // Uses `config` for new calls: same buffer geometry (and no `new_connection`) -> the current
  // connection switches; another geometry -> a new connection, the old one drains and closes.
  Status ApplyLocked(const Config& config, uint32_t epoch, bool new_connection = false) {
    const Geometry geometry = GeometryFor(config);
    const bool same = !new_connection && current_ && !current_->closed() &&
                      current_->geometry().buffer_bytes == geometry.buffer_bytes &&
                      current_->geometry().buffer_count == geometry.buffer_count &&
                      current_->geometry().max_outstanding == geometry.max_outstanding;
    if (same) {
      current_->SetConfig(config, epoch);
    } else {
      wire::ConnectParams params{};
      params.wire_version = wire::kWireVersion;
      params.eager_buffer_count = geometry.buffer_count;
      params.eager_buffer_bytes = geometry.buffer_bytes;
      params.max_outstanding = geometry.max_outstanding;
      params.config_epoch = epoch;
      // Each data connection spends the ticket of the handshake before it.
      if (ticket_.size() != sizeof(params.ticket)) {
        return Status::ProtocolError("server " + server_address_ +
                                     " issued no data ticket: use matching artune builds");
      }
      std::memcpy(params.ticket, ticket_.data(), sizeof(params.ticket));
      ticket_.clear();
      // Before the dial: the server's idle watch starts after it (QuietFor).
      const auto dialled = std::chrono::steady_clock::now();
      ARTUNE_ASSIGN_OR_RETURN(
          std::shared_ptr<fabric::Endpoint> endpoint,
          fabric_->Connect(data_endpoint_, std::as_bytes(std::span(&params, 1))));
      auto connection =
          std::make_shared<Connection>(Role::kClient, std::move(endpoint), *allocator_, stats_,
                                       geometry, config, epoch, timer_.get(), nullptr, nullptr);
      connection->MarkActiveAt(dialled);
      ARTUNE_RETURN_IF_ERROR(connection->Start());
      if (current_) retiring_.push_back(std::move(current_));
      current_ = std::move(connection);
    }
    // Retired connections close once their calls have drained.
    std::erase_if(retiring_, [](const std::shared_ptr<Connection>& old) {
      if (old->calls_in_flight() > 0 && !old->closed()) return false;
      old->Close(Status::Cancelled("connection retired after a reconfiguration"));
      return true;
    });
    fabric_->SetPolling(config.polling);
    fabric_->SetPollSpin(config.poll_spin_us);
    config_ = config;
    epoch_ = epoch;
    slots_->SetLimit(config.max_outstanding);
    return Status::Ok();
  }

  Config KeepLocalKnobs(const Config& agreed) const { return WithLocalKnobs(agreed, local_); }

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<control::Control::Stub> stub_;
  Config local_;  // the config the client was created with
  const std::string server_address_;
  const std::string token_;
  std::string data_endpoint_;
  std::shared_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<RegisteredAllocator> allocator_;
  StatsRecorder stats_;
  std::unique_ptr<Timer> timer_;
  std::shared_ptr<CallSlots> slots_;

  mutable std::mutex mutex_;
  Config config_;
  uint32_t epoch_ = 0;
  std::shared_ptr<Connection> current_;
  std::vector<std::shared_ptr<Connection>> retiring_;
  std::string ticket_;           // from the last handshake or reconfigure, until spent
  uint32_t server_idle_ms_ = 0;  // the server's idle_timeout_ms (0: it never closes)
};

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const Config& config,
                                                const std::string& server_address) {
  ARTUNE_ASSIGN_OR_RETURN(Credentials credentials, CredentialsFromEnvironment());
  return Connect(config, server_address, credentials);
}

namespace {

// "host:port" with a port gRPC would not silently wrap (it takes 99999 as 34463).
Status CheckServerAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  const char* begin = address.data() + (colon == std::string::npos ? 0 : colon + 1);
  const char* end = address.data() + address.size();
  auto [ptr, error] = std::from_chars(begin, end, port);
  if (colon == std::string::npos || colon == 0 || error != std::errc() || ptr != end || port < 1 ||
      port > 65535) {
    return Status::InvalidArgument("bad server address '" + address +
                                   "': expected HOST:PORT with a port from 1 to 65535");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const Config& config,
                                                const std::string& server_address,
                                                const Credentials& credentials) {
  ARTUNE_RETURN_IF_ERROR(CheckServerAddress(server_address));
  ARTUNE_RETURN_IF_ERROR(ValidateConfig(config));
  if (fabric::ResolveFabricKind(config.fabric) == FabricKind::kVerbs) {
    // Fail early and clearly rather than after a handshake.
    ARTUNE_RETURN_IF_ERROR(fabric::MakeFabric(config.fabric, config).status());
  }
  auto channel = grpc::CreateChannel(server_address, ChannelCredentials(credentials));
  auto client = std::make_unique<ClientImpl>(std::move(channel), server_address, credentials.token);
  ARTUNE_RETURN_IF_ERROR(client->Init(config));
  return std::unique_ptr<Client>(std::move(client));
}

Result<Stats> QueryServerStats(const std::string& address, std::chrono::milliseconds deadline,
                               const Credentials& credentials) {
  ARTUNE_RETURN_IF_ERROR(CheckServerAddress(address));
  auto channel = grpc::CreateChannel(address, ChannelCredentials(credentials));
  auto stub = control::Control::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  if (credentials.has_token()) {
    context.AddMetadata(std::string(kTokenMetadataKey), credentials.token);
  }
  control::StatsResponse response;
  grpc::Status status = stub->GetStats(&context, control::StatsRequest(), &response);
  if (!status.ok()) return FromGrpc(status, "stats from the transport server at " + address);
  return FromProto(response);
}

}  // namespace artune::transport
