// The verbs fabric: device and protection domain, registrations, rdma_cm listen /
// connect / accept, the rdma_cm event thread, shutdown. The completion progress
// (the thread's loop, caller-driven passes) is in verbs_progress.cc.
#include "fabric/verbs/verbs_fabric.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "fabric/verbs/verbs_util.h"
#include "thread_name.h"

namespace artune::transport::fabric::verbs {
namespace {

// Address and route resolution, and the CM handshake, each within this long (the
// lab's emulated CPUs need seconds, real hardware milliseconds).
constexpr int kResolveTimeoutMs = 10000;
constexpr int kConnectTimeoutMs = 20000;
// rdma_cm carries 56 bytes of private data on RC; one is our length prefix.
constexpr size_t kMaxPrivateData = 55;

Result<sockaddr_in> ParseAddress(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("verbs endpoint '" + endpoint + "' is not host:port");
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string host = endpoint.substr(0, colon);
  const std::string port = endpoint.substr(colon + 1);
  int rc = ::getaddrinfo(host.empty() ? "0.0.0.0" : host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::InvalidArgument("cannot resolve verbs endpoint '" + endpoint +
                                   "': " + ::gai_strerror(rc));
  }
  sockaddr_in address{};
  std::memcpy(&address, found->ai_addr, sizeof(address));
  ::freeaddrinfo(found);
  return address;
}

std::string AddressText(const sockaddr* address) {
  if (address == nullptr || address->sa_family != AF_INET) return "?";
  const auto* in = reinterpret_cast<const sockaddr_in*>(address);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
}

std::string DeviceOf(const rdma_cm_id* id) {
  return id->verbs != nullptr ? ibv_get_device_name(id->verbs->device) : "(none)";
}

// Waits for the next rdma_cm event on a private channel; it must be `expected`.
Status WaitFor(rdma_event_channel* channel, rdma_cm_event_type expected, int timeout_ms,
               const std::string& what) {
  pollfd fd{channel->fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&fd, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    return Status::Timeout(what + ": no " + CmEventText(expected) + " within " +
                           std::to_string(timeout_ms) + " ms");
  }
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel, &event) != 0) {
    return Status::Unavailable(what + ": rdma_get_cm_event failed: " + std::strerror(errno));
  }
  const rdma_cm_event_type type = event->event;
  const int status = event->status;
  // A refusing server says why in the reject's private data (printable text).
  std::string reason;
  if (type == RDMA_CM_EVENT_REJECTED && event->param.conn.private_data != nullptr) {
    const auto* text = static_cast<const char*>(event->param.conn.private_data);
    for (uint8_t i = 0; i < event->param.conn.private_data_len && text[i] != '\0'; ++i) {
      reason.push_back(std::isprint(static_cast<unsigned char>(text[i])) ? text[i] : '?');
    }
  }
  rdma_ack_cm_event(event);
  if (type != expected) {
    return Status::Unavailable(what + ": expected " + CmEventText(expected) + ", got " +
                               CmEventText(type) + " (status " + std::to_string(status) + ")" +
                               (reason.empty() ? "" : ": the server says: " + reason));
  }
  return Status::Ok();
}

// Refuses a connect request, telling the client why (REJ private data, <= 148 bytes).
void Reject(rdma_cm_id* id, const std::string& why) {
  const std::string text = why.substr(0, 140);
  rdma_reject(id, text.c_str(), static_cast<uint8_t>(text.size() + 1));
}

}  // namespace

VerbsFabric::VerbsFabric(const Config& config)
    : ProgressFabric(FabricKind::kVerbs, config.polling, config.poll_spin_us), config_(config) {}

VerbsFabric::~VerbsFabric() {
  Shutdown();
  {
    std::lock_guard lock(regions_mutex_);
    for (auto& [lkey, mr] : regions_) ibv_dereg_mr(mr);
    regions_.clear();
  }
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (cm_devices_ != nullptr) rdma_free_devices(cm_devices_);
}

Status VerbsFabric::OpenDevice() {
  int cm_count = 0;
  cm_devices_ = rdma_get_devices(&cm_count);
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (cm_devices_ == nullptr || cm_count == 0 || list == nullptr || count == 0) {
    if (list != nullptr) ibv_free_device_list(list);
    return Status::Unavailable(
        "no verbs device on this host (`artune devices` lists none); use fabric = tcp");
  }
  auto context_named = [&](const std::string& name) -> ibv_context* {
    for (int i = 0; i < cm_count; ++i) {
      if (name == ibv_get_device_name(cm_devices_[i]->device)) return cm_devices_[i];
    }
    return nullptr;
  };
  Status status;
  if (config_.verbs_device != 0) {
    if (config_.verbs_device > static_cast<uint32_t>(count)) {
      status = Status::InvalidArgument("verbs_device " + std::to_string(config_.verbs_device) +
                                       ", but this host has " + std::to_string(count) +
                                       " verbs devices (see `artune devices`)");
    } else {
      device_name_ = ibv_get_device_name(list[config_.verbs_device - 1]);
    }
  } else {
    // Auto: the first device with an ACTIVE port.
    for (int i = 0; i < count && device_name_.empty(); ++i) {
      ibv_context* context = context_named(ibv_get_device_name(list[i]));
      ibv_device_attr attr{};
      if (context == nullptr || ibv_query_device(context, &attr) != 0) continue;
      for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr port{};
        if (ibv_query_port(context, p, &port) == 0 && port.state == IBV_PORT_ACTIVE) {
          device_name_ = ibv_get_device_name(list[i]);
          break;
        }
      }
    }
    if (device_name_.empty()) {
      status = Status::Unavailable(
          "no verbs device has an ACTIVE port (see `artune devices`); use fabric = tcp");
    }
  }
  ibv_free_device_list(list);
  ARTUNE_RETURN_IF_ERROR(status);
  context_ = context_named(device_name_);
  if (context_ == nullptr) {
    return Status::Unavailable("verbs device " + device_name_ +
                               " is not usable by the RDMA connection manager (rdma_ucm loaded?)");
  }
  ibv_device_attr attr{};
  if (int rc = ibv_query_device(context_, &attr); rc != 0) {
    return Status::Unavailable("ibv_query_device(" + device_name_ +
                               ") failed: " + std::strerror(rc));
  }
  max_qp_wr_ = static_cast<uint32_t>(attr.max_qp_wr);
  max_rd_atomic_ = static_cast<uint32_t>(std::min(attr.max_qp_rd_atom, 16));
  uses_windows_ = (attr.device_cap_flags &
                   (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) {
    return Status::Unavailable("ibv_alloc_pd(" + device_name_ +
                               ") failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

Status VerbsFabric::Init() {
  ARTUNE_RETURN_IF_ERROR(OpenDevice());
  comp_channel_ = ibv_create_comp_channel(context_);
  cm_channel_ = rdma_create_event_channel();
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (comp_channel_ == nullptr || cm_channel_ == nullptr || wake_fd_ < 0) {
    return Status::Unavailable("cannot create the verbs fabric's channels on " + device_name_ +
                               ": " + std::strerror(errno));
  }
  ::fcntl(comp_channel_->fd, F_SETFL, ::fcntl(comp_channel_->fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(cm_channel_->fd, F_SETFL, ::fcntl(cm_channel_->fd, F_GETFL) | O_NONBLOCK);
  StartProgressThread();
  cm_thread_ = std::thread([this] { CmLoop(); });
  return Status::Ok();
}

Result<MemoryKeys> VerbsFabric::Register(std::byte* addr, uint64_t length) {
  if (addr == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory region");
  }
  // With memory windows the region itself grants no remote access: only the
  // windows bound over offered ranges do.
  const int access =
      IBV_ACCESS_LOCAL_WRITE | (uses_windows_ ? IBV_ACCESS_MW_BIND : IBV_ACCESS_REMOTE_READ);
  ibv_mr* mr = ibv_reg_mr(pd_, addr, length, access);
  if (mr == nullptr) {
    return Status::ResourceExhausted("ibv_reg_mr of " + std::to_string(length) + " bytes on " +
                                     device_name_ + " failed: " + std::strerror(errno) +
                                     "; raise the locked-memory limit (ulimit -l)");
  }
  std::lock_guard lock(regions_mutex_);
  regions_[mr->lkey] = mr;
  return MemoryKeys{mr->lkey, mr->rkey};
}

ibv_mr* VerbsFabric::FindRegion(uint32_t lkey) {
  std::lock_guard lock(regions_mutex_);
  auto it = regions_.find(lkey);
  return it == regions_.end() ? nullptr : it->second;
}

void VerbsFabric::Deregister(const MemoryKeys& keys) {
  ibv_mr* mr = nullptr;
  {
    std::lock_guard lock(regions_mutex_);
    auto it = regions_.find(keys.lkey);
    if (it == regions_.end()) return;
    mr = it->second;
    regions_.erase(it);
  }
  ibv_dereg_mr(mr);
}

Status VerbsFabric::CheckDevice(rdma_cm_id* id, const std::string& what) const {
  if (id->verbs != context_) {
    return Status::InvalidArgument(what + " resolves to verbs device " + DeviceOf(id) +
                                   ", but this fabric opened " + device_name_ +
                                   "; set verbs_device to that device's number in "
                                   "`artune devices`");
  }
  if (config_.verbs_port != 0 && id->port_num != config_.verbs_port) {
    return Status::InvalidArgument(what + " resolves to port " + std::to_string(id->port_num) +
                                   " of " + device_name_ + ", but verbs_port is " +
                                   std::to_string(config_.verbs_port));
  }
  return Status::Ok();
}

rdma_conn_param VerbsFabric::ConnParam(uint32_t qp_num,
                                       std::span<const std::byte> private_data) const {
  rdma_conn_param param{};
  param.private_data = private_data.empty() ? nullptr : private_data.data();
  param.private_data_len = static_cast<uint8_t>(private_data.size());
  param.responder_resources = static_cast<uint8_t>(max_rd_atomic_);
  param.initiator_depth = static_cast<uint8_t>(max_rd_atomic_);
  param.retry_count = static_cast<uint8_t>(config_.verbs_retry_count);
  param.rnr_retry_count = 6;
  param.qp_num = qp_num;
  return param;
}

Result<std::string> VerbsFabric::Listen(const std::string& host, AcceptHandler on_accept) {
  if (listen_id_ != nullptr) return Status::AlreadyExists("the verbs fabric is already listening");
  ARTUNE_ASSIGN_OR_RETURN(sockaddr_in address, ParseAddress(host + ":0"));
  on_accept_ = std::move(on_accept);
  if (rdma_create_id(cm_channel_, &listen_id_, this, RDMA_PS_TCP) != 0) {
    return Status::Unavailable(std::string("rdma_create_id failed: ") + std::strerror(errno));
  }
  if (rdma_bind_addr(listen_id_, reinterpret_cast<sockaddr*>(&address)) != 0) {
    return Status::Unavailable("rdma_bind_addr(" + host + ") failed: " + std::strerror(errno) +
                               "; the verbs fabric listens on an IP address of an RDMA netdev");
  }
  if (listen_id_->verbs != nullptr) {
    ARTUNE_RETURN_IF_ERROR(CheckDevice(listen_id_, "listen address " + host));
  }
  if (rdma_listen(listen_id_, 128) != 0) {
    return Status::Unavailable("rdma_listen(" + host + ") failed: " + std::strerror(errno));
  }
  return host + ":" + std::to_string(ntohs(rdma_get_src_port(listen_id_)));
}

Result<std::shared_ptr<Endpoint>> VerbsFabric::Connect(const std::string& endpoint,
                                                       std::span<const std::byte> private_data) {
  if (private_data.size() > kMaxPrivateData) {
    return Status::InvalidArgument("verbs connect private data of " +
                                   std::to_string(private_data.size()) + " bytes (limit " +
                                   std::to_string(kMaxPrivateData) + ")");
  }
  // The CM pads private data to 56 bytes on RC: a length byte goes first.
  std::vector<std::byte> framed;
  framed.push_back(static_cast<std::byte>(private_data.size()));
  framed.insert(framed.end(), private_data.begin(), private_data.end());
  ARTUNE_ASSIGN_OR_RETURN(sockaddr_in address, ParseAddress(endpoint));
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr) {
    return Status::Unavailable(std::string("rdma_create_event_channel failed: ") +
                               std::strerror(errno));
  }
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    Status error =
        Status::Unavailable(std::string("rdma_create_id failed: ") + std::strerror(errno));
    rdma_destroy_event_channel(channel);
    return error;
  }
  const std::string what = "verbs connect to " + endpoint;
  auto created = std::make_shared<VerbsEndpoint>(*this, id, endpoint + " (" + device_name_ + ")");
  Status status;
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&address), kResolveTimeoutMs) !=
      0) {
    status = Status::Unavailable(what + ": rdma_resolve_addr failed: " + std::strerror(errno));
  }
  if (status.ok())
    status = WaitFor(channel, RDMA_CM_EVENT_ADDR_RESOLVED, kResolveTimeoutMs + 2000, what);
  if (status.ok()) status = CheckDevice(id, what);
  if (status.ok() && rdma_resolve_route(id, kResolveTimeoutMs) != 0) {
    status = Status::Unavailable(what + ": rdma_resolve_route failed: " + std::strerror(errno));
  }
  if (status.ok())
    status = WaitFor(channel, RDMA_CM_EVENT_ROUTE_RESOLVED, kResolveTimeoutMs + 2000, what);
  if (status.ok()) status = created->CreateQueues();
  if (status.ok()) status = created->ModifyQp(IBV_QPS_INIT);
  if (status.ok()) {
    rdma_conn_param param = ConnParam(created->qp_num(), framed);
    if (rdma_connect(id, &param) != 0) {
      status = Status::Unavailable(what + ": rdma_connect failed: " + std::strerror(errno));
    }
  }
  if (status.ok()) {
    status = WaitFor(channel, RDMA_CM_EVENT_CONNECT_RESPONSE, kConnectTimeoutMs, what);
    if (status.code() == ErrorCode::kUnavailable) {
      status =
          Status::Unavailable(status.message() + " (the server refused the connection or is gone)");
    }
  }
  if (status.ok()) status = created->ModifyQp(IBV_QPS_RTR);
  if (status.ok()) status = created->ModifyQp(IBV_QPS_RTS);
  if (status.ok() && rdma_establish(id) != 0) {
    status = Status::Unavailable(what + ": rdma_establish failed: " + std::strerror(errno));
  }
  // From here on the fabric's rdma_cm thread hears this connection's events.
  if (status.ok() && rdma_migrate_id(id, cm_channel_) != 0) {
    status = Status::Unavailable(what + ": rdma_migrate_id failed: " + std::strerror(errno));
  }
  if (!status.ok()) {
    created->Release();
    rdma_destroy_event_channel(channel);
    return status;
  }
  rdma_destroy_event_channel(channel);
  if (stopping_) {
    created->Release();
    return Status::Cancelled("the verbs fabric is shutting down");
  }
  Adopt(created);
  return std::shared_ptr<Endpoint>(created);
}

void VerbsFabric::Adopt(const std::shared_ptr<VerbsEndpoint>& endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  endpoints_[endpoint->cm_id()] = endpoint;
  ++endpoints_version_;
}

std::shared_ptr<VerbsEndpoint> VerbsFabric::FindByCmId(rdma_cm_id* id) {
  std::lock_guard lock(endpoints_mutex_);
  auto it = endpoints_.find(id);
  return it == endpoints_.end() ? nullptr : it->second;
}

Status VerbsFabric::AcceptRequest(rdma_cm_id* id, std::span<const std::byte> private_data) {
  const std::string peer = AddressText(rdma_get_peer_addr(id)) + " (" + device_name_ + ")";
  Status status = CheckDevice(id, "connection from " + peer);
  if (!status.ok() || !on_accept_) {
    Reject(id, status.ok() ? "not listening" : status.message());
    rdma_destroy_id(id);
    return status.ok() ? Status::Internal("a connect request on a fabric that does not listen")
                       : status;
  }
  auto endpoint = std::make_shared<VerbsEndpoint>(*this, id, peer);
  status = endpoint->CreateQueues();
  if (status.ok()) status = endpoint->ModifyQp(IBV_QPS_INIT);
  if (status.ok()) status = endpoint->ModifyQp(IBV_QPS_RTR);
  if (status.ok()) status = endpoint->ModifyQp(IBV_QPS_RTS);
  if (status.ok()) {
    Adopt(endpoint);
    status = on_accept_(endpoint, private_data);
    if (!status.ok()) status = status.WithContext("connection from " + peer + " refused");
  }
  if (!status.ok()) {
    {
      std::lock_guard lock(endpoints_mutex_);
      endpoints_.erase(id);
      ++endpoints_version_;
    }
    Reject(id, status.message());
    endpoint->Release();
    return status;
  }
  rdma_conn_param param = ConnParam(endpoint->qp_num(), {});
  if (rdma_accept(id, &param) != 0) {
    endpoint->Fail(
        Status::Unavailable("rdma_accept for " + peer + " failed: " + std::strerror(errno)));
  }
  return Status::Ok();
}

void VerbsFabric::CmLoop() {
  NameThisThread("artune-verbs-cm");
  while (!stopping_.load(std::memory_order_relaxed)) {
    pollfd fd{cm_channel_->fd, POLLIN, 0};
    // A bounded wait so Shutdown is noticed without a second wake-up descriptor.
    if (::poll(&fd, 1, 100) <= 0) continue;
    rdma_cm_event* event = nullptr;
    while (rdma_get_cm_event(cm_channel_, &event) == 0) {
      const rdma_cm_event_type type = event->event;
      rdma_cm_id* id = event->id;
      const int status = event->status;
      std::vector<std::byte> private_data;
      if (type == RDMA_CM_EVENT_CONNECT_REQUEST && event->param.conn.private_data != nullptr &&
          event->param.conn.private_data_len > 0) {
        // Strip the padding: the first byte is the length the client sent (Connect).
        const auto* data = static_cast<const std::byte*>(event->param.conn.private_data);
        const size_t length = std::min<size_t>(static_cast<uint8_t>(data[0]),
                                               event->param.conn.private_data_len - 1u);
        private_data.assign(data + 1, data + 1 + length);
      }
      // Acknowledge first: rdma_destroy_id (on any thread) waits for it.
      rdma_ack_cm_event(event);
      switch (type) {
        case RDMA_CM_EVENT_CONNECT_REQUEST:
          (void)AcceptRequest(id, private_data);  // refused: the client sees the reject
          break;
        case RDMA_CM_EVENT_ESTABLISHED:
          break;
        default:
          if (auto endpoint = FindByCmId(id)) {
            endpoint->FailLost(Status::Unavailable("verbs connection to " + endpoint->peer() +
                                                   " lost: " + CmEventText(type) + " (status " +
                                                   std::to_string(status) + ")"));
          }
          break;
      }
    }
  }
}

void VerbsFabric::StopOtherThreads() {
  if (cm_thread_.joinable()) cm_thread_.join();
}

void VerbsFabric::TearDownLocked() {
  snapshot_.clear();
  // The threads are gone: fail every endpoint and drive its flushes here.
  std::vector<std::shared_ptr<VerbsEndpoint>> remaining;
  {
    std::lock_guard lock(endpoints_mutex_);
    for (auto& [id, endpoint] : endpoints_) remaining.push_back(endpoint);
    endpoints_.clear();
    ++endpoints_version_;
  }
  for (auto& endpoint : remaining) {
    endpoint->Fail(Status::Cancelled("the transport is shutting down"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!endpoint->disconnected() && !endpoint->Progress(/*arm=*/false).finished &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    endpoint->Release();
  }
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  listen_id_ = nullptr;
  if (cm_channel_ != nullptr) rdma_destroy_event_channel(cm_channel_);
  cm_channel_ = nullptr;
  if (comp_channel_ != nullptr) ibv_destroy_comp_channel(comp_channel_);
  comp_channel_ = nullptr;
}

}  // namespace artune::transport::fabric::verbs
