// Server (transport.h): the gRPC control service, the fabric listener and the
// connections it accepted. The handlers' threads and response writer are in
// server_handlers.h, the one-time data tickets in server_tickets.h.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "allocator.h"
#include "artune/transport/credentials.h"
#include "artune/transport/knobs.h"
#include "connection.h"
#include "control.grpc.pb.h"
#include "control_codec.h"
#include "control_listener.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_fabric.h"
#include "refusal_log.h"
#include "server_handlers.h"
#include "server_tickets.h"
#include "stats.h"
#include "timer.h"
#include "wire.h"

namespace artune::transport {
namespace {

// Registered bytes all data connections' receive pools may hold together: half of
// the allocator's limit, so responses and staging copies always have the rest.
constexpr uint64_t kReceivePoolBudget = kAllocatorLimitBytes / 2;

uint64_t PoolBytes(const Geometry& geometry) {
  return (uint64_t{geometry.buffer_count} + 1) * geometry.buffer_bytes;  // + the spare
}

// A Reconfigure must leave room, within the budget, for a receive pool of its
// geometry for every data connection open now (each client moves to it) and this
// many more; else it would starve every later handshake.
constexpr uint64_t kReconfigureHeadroomConnections = 4;

// A handler and how it may be run.
struct Registered {
  Handler handler;
  HandlerOptions options;
};

class ServerImpl final : public Server, public control::Control::Service {
 public:
  // `local_fabric` (may be null): an shm fabric beside `fabric` for clients on
  // this host (fabric = auto).
  ServerImpl(const Config& config, std::shared_ptr<fabric::Fabric> fabric,
             std::shared_ptr<fabric::Fabric> local_fabric, Credentials credentials)
      : config_(config),
        credentials_(std::move(credentials)),
        fabric_(std::move(fabric)),
        allocator_(fabric_, kAllocatorLimitBytes),
        local_fabric_(std::move(local_fabric)),
        workers_(std::max(2u, std::thread::hardware_concurrency())) {
    if (local_fabric_) {
      local_allocator_ = std::make_unique<RegisteredAllocator>(local_fabric_, kAllocatorLimitBytes);
    }
    inline_handlers_.store(config.handler_inline == HandlerInline::kAuto);
  }

  ~ServerImpl() override { Shutdown(); }

  Status Start(const std::string& listen_address) {
    const size_t colon = listen_address.rfind(':');
    if (colon == std::string::npos) {
      return Status::InvalidArgument("listen address '" + listen_address +
                                     "' is not host:port (port 0 picks one)");
    }
    std::string host = listen_address.substr(0, colon);
    if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "0.0.0.0";
    if (!IsLoopbackHost(host) && !credentials_.has_token()) {
      return Status::InvalidArgument(
          "listening on " + listen_address +
          " reaches beyond this host and needs a token: put one in " + DefaultTokenPath() +
          " (0600; `artune serve --listen` creates it) and give the same file to the clients, "
          "or listen on 127.0.0.1");
    }
    // Loopback without a token: the data listener admits this user (and root) only.
    if (!credentials_.has_token()) fabric_->AdmitOwnUserOnly();
    ARTUNE_ASSIGN_OR_RETURN(data_endpoint_,
                            fabric_->Listen(host, [this](std::shared_ptr<fabric::Endpoint> endpoint,
                                                         std::span<const std::byte> private_data) {
                              return Accept(std::move(endpoint), private_data, allocator_);
                            }));
    if (local_fabric_) {
      // Clients on this host take the shm listener instead (client.cc); one that
      // cannot have it here just keeps using the main fabric.
      auto accept_local = [this](std::shared_ptr<fabric::Endpoint> endpoint,
                                 std::span<const std::byte> private_data) {
        return Accept(std::move(endpoint), private_data, *local_allocator_);
      };
      Result<std::string> identity = fabric::shm::HostIdentity();
      Result<std::string> local =
          identity.ok() ? local_fabric_->Listen(host, accept_local) : identity.status();
      if (local.ok()) {
        local_endpoint_ = *local;
        local_identity_ = *identity;
      } else {
        std::fprintf(stderr, "artune transport: no shm listener for clients on this host: %s\n",
                     local.status().message().c_str());
      }
    }
    if (host == "0.0.0.0" && fabric_->kind() != FabricKind::kShm) {
      // Listening on every interface: advertise ":port"; clients connect to the
      // host they reached the control plane on. (shm's "shm:@name" names no host:
      // only clients on this host can use it.)
      data_endpoint_ = data_endpoint_.substr(data_endpoint_.rfind(':'));
    }
    // The control plane's socket and accept loop are ours (control_listener.h);
    // gRPC gets each admitted connection.
    ARTUNE_ASSIGN_OR_RETURN(const uint16_t requested_port, ParseListenPort(listen_address));
    ARTUNE_ASSIGN_OR_RETURN(
        control_listener_,
        ControlListener::Bind(listen_address.substr(0, colon), requested_port,
                              {ControlConnectionCap(), !credentials_.has_token()}));
    grpc::ServerBuilder builder;
    std::shared_ptr<grpc::ServerCredentials> transport_security = grpc::InsecureServerCredentials();
    if (credentials_.server_tls()) {
      grpc::SslServerCredentialsOptions tls;
      tls.pem_key_cert_pairs.push_back({credentials_.tls_key_pem, credentials_.tls_cert_pem});
      transport_security = grpc::SslServerCredentials(tls);
    }
    auto acceptor = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
        transport_security);
    ApplyControlPlaneLimits(builder);
    builder.RegisterService(this);
    grpc_server_ = builder.BuildAndStart();
    if (!grpc_server_) {
      return Status::Unavailable("cannot start the control plane on " + listen_address);
    }
    control_listener_->Start(std::move(acceptor));
    address_ = listen_address.substr(0, colon) + ":" + std::to_string(control_listener_->port());
    return Status::Ok();
  }

  // --- Server -------------------------------------------------------------

  void RegisterHandler(const std::string& method, Handler handler,
                       HandlerOptions options) override {
    std::unique_lock lock(handlers_mutex_);
    handlers_[method] = std::make_shared<Registered>(Registered{std::move(handler), options});
  }

  std::string address() const override { return address_; }
  std::string data_endpoint() const override { return data_endpoint_; }
  std::string local_endpoint() const override { return local_endpoint_; }
  FabricKind fabric() const override { return fabric_->kind(); }

  Status Reconfigure(const Config& config) override {
    ARTUNE_RETURN_IF_ERROR(ValidateConfig(config));
    if (fabric::ResolveFabricKind(config.fabric) != fabric_->kind()) {
      return Status::InvalidArgument("fabric cannot change on a running server (it runs " +
                                     std::string(fabric::FabricKindName(fabric_->kind())) +
                                     "); restart it instead");
    }
    std::lock_guard lock(mutex_);
    ARTUNE_RETURN_IF_ERROR(CheckPoolsWouldFitLocked(config));
    for (const Knob& knob : Knobs()) {
      if (knob.live || knob.name == "fabric" || knob.get(config) == knob.get(config_)) continue;
      return Status::InvalidArgument(
          std::string(knob.name) + " cannot change on a running server (it is set when the " +
          "transport starts; it runs " + FormatKnobValue(knob, knob.get(config_)) +
          "); restart it with " + std::string(knob.name) + "=" +
          FormatKnobValue(knob, knob.get(config)));
    }
    for (fabric::Fabric* fabric : {fabric_.get(), local_fabric_.get()}) {
      if (fabric == nullptr) continue;
      fabric->SetPolling(config.polling);
      fabric->SetPollSpin(config.poll_spin_us);
    }
    inline_handlers_.store(config.handler_inline == HandlerInline::kAuto,
                           std::memory_order_relaxed);
    config_ = config;
    ++epoch_;
    for (const auto& connection : connections_) connection->SetConfig(config_, epoch_);
    return Status::Ok();
  }

  Config config() const override {
    std::lock_guard lock(mutex_);
    return config_;
  }
  Stats stats() const override { return stats_.Snapshot(); }
  void SetExtraStats(std::function<Stats()> source) override {
    std::lock_guard lock(extra_stats_mutex_);
    extra_stats_ = std::move(source);
  }
  Allocator& allocator() override { return allocator_; }

  void Shutdown() override {
    std::lock_guard shutdown_lock(shutdown_mutex_);
    if (shut_down_) return;
    shut_down_ = true;
    if (control_listener_) control_listener_->Stop();
    if (grpc_server_) {
      grpc_server_->Shutdown(std::chrono::system_clock::now());
      grpc_server_->Wait();
    }
    fabric_->Shutdown();  // every connection gets kDisconnected: calls fail
    if (local_fabric_) local_fabric_->Shutdown();
    workers_.Stop();
    std::lock_guard lock(mutex_);
    connections_.clear();
  }

  // --- control::Control::Service -------------------------------------------

  grpc::Status Handshake(grpc::ServerContext* context, const control::HandshakeRequest* request,
                         control::HandshakeResponse* response) override {
    if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
    if (request->wire_version() != wire::kWireVersion) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "wire version " + std::to_string(request->wire_version()) +
                              " not supported; this server speaks " +
                              std::to_string(wire::kWireVersion) + ": use matching artune builds");
    }
    return FillConfig(response);
  }

  grpc::Status GetStats(grpc::ServerContext* context, const control::StatsRequest*,
                        control::StatsResponse* response) override {
    if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
    Stats stats = stats_.Snapshot();
    {
      std::lock_guard lock(extra_stats_mutex_);
      if (extra_stats_) {
        const Stats extra = extra_stats_();
        for (int p = 0; p < kProtocolCount; ++p) {
          stats.by_protocol[p].slices += extra.by_protocol[p].slices;
          stats.by_protocol[p].bytes += extra.by_protocol[p].bytes;
          for (int b = 0; b < kLog2BucketCount; ++b) {
            stats.by_protocol[p].slices_by_bucket[b] += extra.by_protocol[p].slices_by_bucket[b];
          }
        }
        stats.calls_started += extra.calls_started;
        stats.calls_completed += extra.calls_completed;
        stats.calls_failed += extra.calls_failed;
      }
    }
    *response = ToProto(stats);
    return grpc::Status::OK;
  }

  grpc::Status Reconfigure(grpc::ServerContext* context, const control::ReconfigureRequest* request,
                           control::HandshakeResponse* response) override {
    if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
    Status status = Reconfigure(WithLocalKnobs(FromKnobs(request->knobs()), config()));
    if (!status.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, status.message());
    }
    // Applied: the answer says so even when no pool has room right now (the data
    // connection the ticket opens is checked against the budget when it comes).
    return FillConfig(response, /*require_room=*/false);
  }

 private:
  // Every control call of a server with a token must carry it ("artune-token").
  grpc::Status Authorize(grpc::ServerContext* context) const {
    if (!credentials_.has_token()) return grpc::Status::OK;
    const auto& metadata = context->client_metadata();
    auto it = metadata.find(std::string(kTokenMetadataKey));
    if (it != metadata.end() &&
        SecretsEqual(std::string(it->second.data(), it->second.size()), credentials_.token)) {
      return grpc::Status::OK;
    }
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        it == metadata.end()
                            ? "this server requires a token: give this client a copy of the "
                              "server's token file (ARTUNE_TOKEN_FILE=PATH)"
                            : "the token does not match the server's");
  }

  // kInvalidArgument when `config`'s receive pool, for every open data
  // connection and kReconfigureHeadroomConnections more, exceeds the budget.
  Status CheckPoolsWouldFitLocked(const Config& config) const {
    const uint64_t pool = PoolBytes(GeometryFor(config));
    const uint64_t connections = connections_.size() + kReconfigureHeadroomConnections;
    if (pool <= kReceivePoolBudget / connections) return Status::Ok();
    return Status::InvalidArgument(
        "refused: a receive pool of " + std::to_string(pool >> 10) + " KiB per data connection (" +
        std::to_string(config.eager_buffer_count) + " + 1 eager buffers of " +
        std::to_string(EagerBufferBytes(config)) + " bytes) for the " +
        std::to_string(connections_.size()) + " open connections and " +
        std::to_string(kReconfigureHeadroomConnections) + " more exceeds the server's budget of " +
        std::to_string(kReceivePoolBudget >> 20) +
        " MiB, and would refuse every later handshake; lower eager_buffer_count, "
        "eager_threshold or coalesce_limit");
  }

  // Issues the ticket of one data connection with this config's receive pool, or
  // (`require_room`) says why the server cannot take one more now.
  grpc::Status FillConfig(control::HandshakeResponse* response, bool require_room = true) {
    std::lock_guard lock(mutex_);
    const uint64_t pool = PoolBytes(GeometryFor(config_));
    if (require_room && pools_in_use_ + pool > kReceivePoolBudget) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "the server's receive pools are full (" + std::to_string(connections_.size()) +
              " connections hold " + std::to_string(pools_in_use_ >> 20) + " of " +
              std::to_string(kReceivePoolBudget >> 20) + " MiB); try again when some have closed");
    }
    const std::string ticket = tickets_.Issue(pool);
    response->set_data_ticket(ticket);
    response->set_wire_version(wire::kWireVersion);
    *response->mutable_knobs() = ToKnobs(config_);
    response->set_config_epoch(epoch_);
    response->set_idle_timeout_ms(config_.idle_timeout_ms);
    response->set_fabric(static_cast<uint32_t>(fabric_->kind()));
    response->set_data_endpoint(data_endpoint_);
    if (!local_endpoint_.empty()) {
      response->set_local_endpoint(local_endpoint_);
      response->set_local_identity(fabric::shm::HostIdentityDigest(local_identity_, ticket));
    }
    return grpc::Status::OK;
  }

  // Progress thread: a client opened a data connection.
  Status Accept(std::shared_ptr<fabric::Endpoint> endpoint, std::span<const std::byte> private_data,
                RegisteredAllocator& allocator) {
    wire::ConnectParams params{};
    if (private_data.size() != sizeof(params)) {
      return Status::ProtocolError("connect parameters of " + std::to_string(private_data.size()) +
                                   " bytes");
    }
    std::memcpy(&params, private_data.data(), sizeof(params));
    if (params.wire_version != wire::kWireVersion || params.eager_buffer_count < 2 ||
        params.eager_buffer_count > wire::kMaxEagerBufferCount ||
        params.eager_buffer_bytes <= kEagerPacketHeaderBytes ||
        params.eager_buffer_bytes > wire::kMaxEagerBufferBytes ||
        params.eager_buffer_count * params.eager_buffer_bytes > kMaxEagerPoolBytes ||
        params.max_outstanding < 1 || params.max_outstanding > 4096) {
      return Status::ProtocolError("connect parameters out of range (wire version " +
                                   std::to_string(params.wire_version) + ", " +
                                   std::to_string(params.eager_buffer_count) + " buffers of " +
                                   std::to_string(params.eager_buffer_bytes) + " bytes)");
    }
    const std::optional<uint64_t> allowed = tickets_.Redeem(
        std::string_view(reinterpret_cast<const char*>(params.ticket), sizeof(params.ticket)));
    if (!allowed) {
      return Refused(Status::PermissionDenied(
          "data connection without a valid ticket (each needs its own from a control-plane "
          "handshake, used once within " +
          std::to_string(kTicketLifetime.count()) + " s)"));
    }
    const Geometry geometry{params.eager_buffer_bytes, params.eager_buffer_count,
                            params.max_outstanding};
    const uint64_t pool = PoolBytes(geometry);
    std::lock_guard lock(mutex_);
    if (shut_down_) return Status::Cancelled("server shutting down");
    // A peer gets the receive pool its handshake's config gives, and all pools
    // together stay within the budget; more is refused, and said.
    if (pool > *allowed || pools_in_use_ + pool > kReceivePoolBudget) {
      return Refused(Status::ResourceExhausted(
          "data connection asks for a receive pool of " + std::to_string(pool) + " bytes (" +
          std::to_string(params.eager_buffer_count) + " x " +
          std::to_string(params.eager_buffer_bytes) + "); its handshake allows " +
          std::to_string(*allowed) + " and the pools hold " + std::to_string(pools_in_use_) +
          " of " + std::to_string(kReceivePoolBudget)));
    }
    auto connection = std::make_shared<Connection>(
        Role::kServer, std::move(endpoint), allocator, stats_, geometry, config_, epoch_,
        &data_timer_,
        [this](std::shared_ptr<Connection> from, IncomingRequest request) {
          Dispatch(std::move(from), std::move(request));
        },
        [this](Connection& closed, const Status& why) { OnClosed(closed, why); });
    ARTUNE_RETURN_IF_ERROR(connection->Start());
    connections_.insert(connection);
    pools_in_use_ += pool;
    stats_.ConnectionAccepted();
    return Status::Ok();
  }

  // Logs a refused data connection (the peer sees only the connection close) and
  // returns the reason.
  static Status Refused(Status why) {
    LogRefusal("refused a data connection: " + why.message());
    return why;
  }

  void OnClosed(Connection& closed, const Status& why) {
    if (why.code() != ErrorCode::kCancelled) stats_.ConnectionDropped();
    std::lock_guard lock(mutex_);
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (it->get() == &closed) {
        pools_in_use_ -= std::min(pools_in_use_, PoolBytes(closed.geometry()));
        connections_.erase(it);
        break;
      }
    }
  }

  // Progress thread: a whole request arrived. A non-blocking handler runs right
  // here when handler_inline allows (one thread hand-off less per call); every
  // other handler, and an unknown method's error, goes to a worker.
  void Dispatch(std::shared_ptr<Connection> from, IncomingRequest request) {
    std::shared_ptr<const Registered> handler;
    {
      std::shared_lock lock(handlers_mutex_);
      auto it = handlers_.find(request.method);
      if (it != handlers_.end()) handler = it->second;
    }
    if (handler && handler->options.non_blocking &&
        inline_handlers_.load(std::memory_order_relaxed)) {
      RunHandler(*handler, *from, request);
      return;
    }
    workers_.Submit(
        [this, handler = std::move(handler), from = std::move(from), request = std::move(request)] {
          if (!handler) {
            from->SendResponse(request.call_id,
                               Status::NotFound("no handler for method '" + request.method +
                                                "' on " + address_ + "; register it on the server"),
                               {}, {}, nullptr);
            return;
          }
          RunHandler(*handler, *from, request);
        });
  }

  void RunHandler(const Registered& handler, Connection& from, const IncomingRequest& request) {
    ResponseWriterImpl writer(from.allocator(), *request.message);
    Status status = handler.handler(*request.message, writer);
    if (status.ok() && !writer.error().ok()) status = writer.error();
    from.SendResponse(request.call_id, status, std::move(writer.slices()),
                      std::move(writer.owned()), writer.uses_request() ? request.message : nullptr);
  }

  // The data connections' deadlines (their read watch); declared before them, so
  // it outlives them.
  Timer data_timer_;
  mutable std::mutex mutex_;
  Config config_;
  const Credentials credentials_;
  Tickets tickets_;
  uint64_t pools_in_use_ = 0;  // receive-pool bytes of the live connections
  uint32_t epoch_ = 1;
  const std::shared_ptr<fabric::Fabric> fabric_;
  RegisteredAllocator allocator_;
  // fabric = auto: shm for clients on this host (null otherwise), its own
  // registrations, its listener and the identity a client must share to use it.
  const std::shared_ptr<fabric::Fabric> local_fabric_;
  std::unique_ptr<RegisteredAllocator> local_allocator_;
  std::string local_endpoint_;
  std::string local_identity_;
  StatsRecorder stats_;
  std::mutex extra_stats_mutex_;
  std::function<Stats()> extra_stats_;  // SetExtraStats
  std::set<std::shared_ptr<Connection>> connections_;
  std::shared_mutex handlers_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Registered>> handlers_;
  // config_.handler_inline == kAuto, read per request without the lock.
  std::atomic<bool> inline_handlers_{true};
  std::unique_ptr<ControlListener> control_listener_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::string address_;
  std::string data_endpoint_;
  std::mutex shutdown_mutex_;
  bool shut_down_ = false;
  WorkerPool workers_;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const Config& config,
                                              const std::string& listen_address) {
  ARTUNE_ASSIGN_OR_RETURN(Credentials credentials, CredentialsFromEnvironment());
  return Start(config, listen_address, credentials);
}

Result<std::unique_ptr<Server>> Server::Start(const Config& config,
                                              const std::string& listen_address,
                                              const Credentials& credentials) {
  ARTUNE_RETURN_IF_ERROR(ValidateConfig(config));
  ARTUNE_RETURN_IF_ERROR(RaiseDescriptorLimit());
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<fabric::Fabric> fabric,
                          fabric::MakeFabric(config.fabric, config));
  // fabric = auto also serves clients on this host over shared memory (they
  // choose it when they share the host identity; client.cc).
  std::unique_ptr<fabric::Fabric> local;
  if (config.fabric == FabricKind::kAuto) {
    Result<std::unique_ptr<fabric::Fabric>> shm = fabric::MakeFabric(FabricKind::kShm, config);
    if (shm.ok()) {
      local = std::move(shm).value();
    } else {
      std::fprintf(stderr, "artune transport: no shm fabric for clients on this host: %s\n",
                   shm.status().message().c_str());
    }
  }
  auto server =
      std::make_unique<ServerImpl>(config, std::move(fabric), std::move(local), credentials);
  ARTUNE_RETURN_IF_ERROR(server->Start(listen_address));
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace artune::transport
