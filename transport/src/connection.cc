// Connection: lifecycle, call table, state transitions, flow control and sending.
// The receive side (packet parsing, reassembly, reads) is in connection_receive.cc.
#include "connection.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "artune/transport/knobs.h"

namespace artune::transport {
namespace {

bool DebugLogging() {
  static const bool enabled = [] {
    const char* value = std::getenv("ARTUNE_TRANSPORT_DEBUG");
    return value != nullptr && value[0] != '\0' && value[0] != '0';
  }();
  return enabled;
}

}  // namespace

Geometry GeometryFor(const Config& config) {
  return {EagerBufferBytes(config), config.eager_buffer_count, config.max_outstanding};
}

Config ClampToGeometry(Config config, const Geometry& geometry) {
  const uint64_t capacity = geometry.buffer_bytes - kEagerPacketHeaderBytes;
  config.eager_threshold = std::min(config.eager_threshold, capacity);
  config.coalesce_limit = std::min(config.coalesce_limit, capacity);
  return config;
}

Connection::Connection(Role role, std::shared_ptr<fabric::Endpoint> endpoint,
                       RegisteredAllocator& allocator, StatsRecorder& stats, Geometry geometry,
                       Config config, uint32_t config_epoch, Timer* timer, RequestSink on_request,
                       ClosedSink on_closed)
    : role_(role),
      endpoint_(std::move(endpoint)),
      allocator_(allocator),
      stats_(stats),
      geometry_(geometry),
      timer_(timer),
      on_request_(std::move(on_request)),
      on_closed_(std::move(on_closed)),
      config_(ClampToGeometry(config, geometry)),
      config_epoch_(config_epoch) {}

Connection::~Connection() = default;

Status Connection::Start() {
  std::lock_guard lock(mutex_);
  // eager_buffer_count data buffers plus the spare for credit packets.
  for (uint32_t i = 0; i <= geometry_.buffer_count; ++i) {
    ARTUNE_ASSIGN_OR_RETURN(Buffer buffer, allocator_.AllocateSmallPages(geometry_.buffer_bytes));
    std::optional<Registration> registration = allocator_.Lookup(buffer.data(), buffer.size());
    ARTUNE_RETURN_IF_ERROR(
        endpoint_->PostRecv(buffer.data(), buffer.size(), registration->keys.lkey, i));
    recv_buffers_.push_back(std::move(buffer));
  }
  send_credits_ = geometry_.buffer_count;
  if (role_ == Role::kServer) ArmIdleWatchLocked();
  std::weak_ptr<Connection> weak = weak_from_this();
  endpoint_->Start([weak](fabric::Endpoint&, const fabric::Completion& completion) {
    if (auto self = weak.lock()) self->OnCompletion(completion);
  });
  return Status::Ok();
}

void Connection::ArmIdleWatchLocked() {
  if (timer_ == nullptr) return;
  std::weak_ptr<Connection> weak = weak_from_this();
  timer_->Add(std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.idle_timeout_ms),
              [weak] {
                if (auto self = weak.lock()) self->OnIdleWatch();
              });
}

void Connection::OnIdleWatch() {
  std::lock_guard lock(mutex_);
  if (disconnected_ || closed_) return;
  const auto quiet = std::chrono::steady_clock::now() - last_activity_;
  // One-way calls handled and not reported yet (fewer than a batch): reported now,
  // not failed by the close; the close waits for the next round.
  const bool reported = oneway_to_return_ > 0;
  if (reported) MaybeReturnCreditsLocked(/*report_every_slot=*/true);
  if (!reported && calls_.empty() && packets_received_ == packets_at_idle_check_ &&
      quiet >= std::chrono::milliseconds(config_.idle_timeout_ms)) {
    FailLocked(Status::Cancelled("closed the data connection of " + peer() + ": no call for " +
                                 std::to_string(config_.idle_timeout_ms) +
                                 " ms (idle_timeout_ms); its client reconnects when it calls"));
    return;
  }
  packets_at_idle_check_ = packets_received_;
  ArmIdleWatchLocked();
}

bool Connection::QuietFor(std::chrono::milliseconds quiet) const {
  std::lock_guard lock(mutex_);
  return calls_.empty() && std::chrono::steady_clock::now() - last_activity_ >= quiet;
}

void Connection::MarkActiveAt(std::chrono::steady_clock::time_point when) {
  std::lock_guard lock(mutex_);
  last_activity_ = when;
}

void Connection::SetConfig(const Config& config, uint32_t epoch) {
  std::lock_guard lock(mutex_);
  config_ = ClampToGeometry(config, geometry_);
  config_epoch_ = epoch;
}

size_t Connection::calls_in_flight() const {
  std::lock_guard lock(mutex_);
  return calls_.size() + oneway_sent_.size();
}

void Connection::Close(const Status& why) {
  {
    std::lock_guard lock(mutex_);
    if (close_reason_.ok()) close_reason_ = why;
  }
  closed_ = true;
  endpoint_->Close(why);
}

void Connection::FailLocked(const Status& why) {
  if (close_reason_.ok()) close_reason_ = why;
  closed_ = true;
  endpoint_->Close(why);  // the fabric answers with kDisconnected, which fails the calls
}

// ---------------------------------------------------------------------------
// Calls.

void Connection::Transition(Call& call, wire::CallState to, std::string_view why) {
  const bool allowed = wire::IsAllowedTransition(call.state, to);
  if (DebugLogging() || !allowed) {
    std::fprintf(stderr, "artune transport: %s call %llu: %s -> %s (%.*s)%s\n",
                 role_ == Role::kClient ? "client" : "server",
                 static_cast<unsigned long long>(call.id),
                 std::string(wire::CallStateName(call.state)).c_str(),
                 std::string(wire::CallStateName(to)).c_str(), static_cast<int>(why.size()),
                 why.data(), allowed ? "" : " [unexpected transition: please report]");
  }
  call.state = to;
}

void Connection::StartCall(std::string_view method, std::span<const ConstSlice> request,
                           std::chrono::steady_clock::time_point deadline, Client::Done done,
                           bool one_way) {
  // Set on every path that reaches the end (closed, or the send failed); an OK
  // Status allocates nothing, which a message would on every call.
  Status failed;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      failed = close_reason_.ok() ? Status::Unavailable("connection to " + peer() + " is closed")
                                  : close_reason_;
    } else {
      const uint64_t id = next_call_id_++;
      last_activity_ = std::chrono::steady_clock::now();
      auto owned = std::make_unique<Call>();
      Call& call = *owned;
      call.id = id;
      call.state = wire::CallState::kSending;
      call.config = config_;
      call.done = std::move(done);
      call.one_way = one_way;
      calls_.emplace(id, std::move(owned));
      stats_.CallStarted();
      Status sent = SendMessageLocked(call, wire::Direction::kRequest, method, request);
      if (!sent.ok()) {
        done = std::move(call.done);
        ReleaseSentLocked(call);
        calls_.erase(id);
        stats_.CallFailed();
        failed = sent;
      } else if (call.one_way) {
        if (call.awaiting_fin) {
          Transition(call, wire::CallState::kAwaitingResponse, "one-way request announced");
          return;  // read by the server: HandleFin
        }
        // In packets: the caller's memory is free; done once the server reports it.
        oneway_sent_.push_back(std::move(call.done));
        Transition(call, wire::CallState::kDone, "one-way request sent");
        MaybeEraseLocked(id);
        return;
      } else {
        Transition(call, wire::CallState::kAwaitingResponse, "request sent");
        if (timer_ != nullptr) {
          std::weak_ptr<Connection> weak = weak_from_this();
          call.timer_handle = timer_->Add(deadline, [weak, id] {
            if (auto self = weak.lock()) self->OnTimeout(id);
          });
          call.has_timer = true;
        }
        return;
      }
    }
  }
  if (done) done(std::move(failed));
}

void Connection::OnTimeout(uint64_t call_id) {
  Client::Done done;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(call_id);
    if (it == calls_.end()) return;
    Call& call = *it->second;
    if (call.state == wire::CallState::kDone || call.state == wire::CallState::kFailed ||
        call.state == wire::CallState::kAbandoned) {
      return;
    }
    call.has_timer = false;
    Transition(call, wire::CallState::kAbandoned, "deadline passed");
    done = std::move(call.done);
    stats_.CallFailed();
    // Slices of the response not read yet never will be; those being read are
    // settled when their reads complete.
    if (call.in.started) {
      SettleDeadCallLocked(call);  // may erase it
    } else {
      MaybeEraseLocked(call_id);
    }
  }
  if (done) {
    done(Status::Timeout("call to " + peer() +
                         " timed out; retry, or raise timeout_ms / the call's timeout"));
  }
}

void Connection::CompleteCallLocked(Call& call, Result<Message> result, Callbacks& callbacks) {
  if (call.has_timer) {
    timer_->Cancel(call.timer_handle);
    call.has_timer = false;
  }
  if (call.state == wire::CallState::kAbandoned || call.state == wire::CallState::kFailed) {
    return;  // the caller already got its answer; a late response is dropped
  }
  if (result.ok()) {
    stats_.CallCompleted();
  } else {
    stats_.CallFailed();
  }
  Transition(call, result.ok() ? wire::CallState::kDone : wire::CallState::kFailed,
             result.ok() ? "response complete" : "error response");
  if (call.done) {
    auto shared = std::make_shared<Result<Message>>(std::move(result));
    callbacks.push_back(
        [done = std::move(call.done), shared]() mutable { done(std::move(*shared)); });
  }
}

void Connection::FailCallLocked(Call& call, const Status& status, Callbacks& callbacks) {
  if (role_ == Role::kClient) {
    CompleteCallLocked(call, status, callbacks);
  } else if (call.state != wire::CallState::kFailed) {
    Transition(call, wire::CallState::kFailed, status.message());
  }
}

void Connection::MaybeEraseLocked(uint64_t call_id) {
  auto it = calls_.find(call_id);
  if (it == calls_.end()) return;
  const Call& call = *it->second;
  const bool finished = call.state == wire::CallState::kDone ||
                        call.state == wire::CallState::kFailed ||
                        call.state == wire::CallState::kAbandoned;
  if (!finished || call.in.reads_in_flight > 0) return;
  // The peer may still read what this end announced: keep it until kFin.
  if (call.awaiting_fin && !disconnected_) return;
  for (const auto& transfer : call.in.transfers) LeaveWindowLocked(*transfer);
  // Erased before its slot is returned: the client may reuse it at once.
  if (role_ == Role::kServer && call.one_way) ++oneway_to_return_;
  calls_.erase(it);
  last_activity_ = std::chrono::steady_clock::now();
}

void Connection::ReleaseSentLocked(Call& call) {
  // The memory goes back to the pool only when no offer of it can be read any more
  // (verbs: when the windows' invalidations completed): each revoke callback holds
  // a share of it, and the last one to go lets it go.
  struct Held {
    std::vector<Buffer> owned;
    std::shared_ptr<Message> keepalive;
  };
  auto held =
      std::make_shared<Held>(Held{std::move(call.sent_owned), std::move(call.sent_keepalive)});
  for (uint32_t offer : call.offers) endpoint_->Revoke(offer, [held] {});
  call.offers.clear();
  call.sent_owned.clear();
  call.sent_keepalive.reset();
  call.awaiting_fin = false;
}

void Connection::SendResponse(uint64_t call_id, const Status& status,
                              std::vector<ConstSlice> slices, std::vector<Buffer> owned,
                              std::shared_ptr<Message> keepalive) {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(call_id);
  if (it == calls_.end() || closed_) return;  // the connection died while handling
  Call& call = *it->second;
  Transition(call, wire::CallState::kSending, status.ok() ? "handler done" : "handler failed");
  if (call.one_way) return FinishOnewayLocked(call, status);
  Status sent;
  if (!status.ok()) {
    stats_.CallFailed();
    sent = SendControlLocked(wire::PacketKind::kError, wire::Direction::kResponse, call_id, status);
  } else {
    call.sent_owned = std::move(owned);
    call.sent_keepalive = std::move(keepalive);
    // Counted before the first packet leaves: the client may see the response (and
    // read these stats) before SendMessageLocked returns.
    stats_.CallCompleted();
    sent = SendMessageLocked(call, wire::Direction::kResponse, "", slices);
    if (!sent.ok()) {
      // The response could not be built (e.g. no registered memory): tell the client.
      ReleaseSentLocked(call);
      stats_.CallFailed();
      sent = SendControlLocked(wire::PacketKind::kError, wire::Direction::kResponse, call_id, sent);
    }
  }
  if (!sent.ok()) {
    FailLocked(sent);
    return;
  }
  if (call.awaiting_fin) {
    Transition(call, wire::CallState::kAwaitingFin, "response announced");
  } else {
    Transition(call, wire::CallState::kDone, "response sent");
    MaybeEraseLocked(call_id);
  }
}

void Connection::FinishOnewayLocked(Call& call, const Status& status) {
  if (!status.ok()) {
    // Nobody waits for this call's answer: the client learns of the failure as
    // its connection closing, and its calls in flight fail.
    stats_.CallFailed();
    FailLocked(Status(status.code(), "one-way call " + std::to_string(call.id) +
                                         " failed in the server's handler: " + status.message()));
    return;
  }
  stats_.CallCompleted();
  Transition(call, wire::CallState::kDone, "one-way: no response");
  MaybeEraseLocked(call.id);  // counts its slot in oneway_to_return_
  MaybeReturnCreditsLocked();
}

// ---------------------------------------------------------------------------
// Sending.

Result<Buffer> Connection::NewPacketLocked() {
  return allocator_.AllocateSmallPages(geometry_.buffer_bytes);
}

void Connection::StampHeaderLocked(std::byte* packet, bool credit_packet) {
  wire::PacketHeader header;
  std::memcpy(&header, packet, sizeof(header));
  header.credits_returned = credits_to_return_;
  credits_to_return_ = 0;
  if (spare_to_return_) header.flags |= wire::kFlagSpareCreditReturned;
  spare_to_return_ = false;
  header.oneway_done = oneway_to_return_;
  oneway_to_return_ = 0;
  header.config_epoch = config_epoch_;
  (void)credit_packet;
  std::memcpy(packet, &header, sizeof(header));
}

Status Connection::PostPacketLocked(Buffer buffer, uint64_t length, bool credit_packet) {
  if (credit_packet) {
    spare_available_ = false;
  } else if (!pending_.empty() || send_credits_ == 0) {
    pending_.push_back({std::move(buffer), length, false});
    return Status::Ok();
  } else {
    --send_credits_;
  }
  StampHeaderLocked(buffer.data(), credit_packet);
  const fabric::SgEntry entry{buffer.data(), length, 0};
  return endpoint_->PostSend(std::span<const fabric::SgEntry>(&entry, 1));
}

Status Connection::FlushPendingLocked() {
  while (!pending_.empty() && send_credits_ > 0) {
    PendingPacket packet = std::move(pending_.front());
    pending_.pop_front();
    --send_credits_;
    StampHeaderLocked(packet.buffer.data(), false);
    const fabric::SgEntry entry{packet.buffer.data(), packet.length, 0};
    ARTUNE_RETURN_IF_ERROR(endpoint_->PostSend(std::span<const fabric::SgEntry>(&entry, 1)));
  }
  return Status::Ok();
}

void Connection::MaybeReturnCreditsLocked(bool report_every_slot) {
  const uint32_t threshold = std::max<uint32_t>(1, geometry_.buffer_count / 2);
  const uint32_t slot_threshold =
      report_every_slot ? 1 : std::max<uint32_t>(1, geometry_.max_outstanding / 2);
  const bool slots_owed = oneway_to_return_ >= slot_threshold;
  if ((credits_to_return_ < threshold && !slots_owed) || closed_) return;
  Status sent = Status::Ok();
  if (spare_available_) {
    sent = SendControlLocked(wire::PacketKind::kCredit, wire::Direction::kRequest, 0, Status::Ok());
  } else if (slots_owed && pending_.empty() && send_credits_ > 0) {
    // The spare is out, and the client may hold it until it sends again, which a
    // client out of call slots never does: the report goes on a regular credit.
    sent = SendRegularCreditLocked();
  } else {
    return;  // the spare, or a credit, comes back with the peer's next packet
  }
  if (!sent.ok()) FailLocked(sent);
}

Status Connection::SendRegularCreditLocked() {
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  wire::PacketHeader header{};
  header.kind = static_cast<uint8_t>(wire::PacketKind::kCredit);
  header.flags = wire::kFlagCreditOnRegular;
  std::memcpy(packet.data(), &header, sizeof(header));
  return PostPacketLocked(std::move(packet), sizeof(header), false);
}

Status Connection::SendControlLocked(wire::PacketKind kind, wire::Direction direction,
                                     uint64_t call_id, const Status& status) {
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  wire::PacketHeader header{};
  header.kind = static_cast<uint8_t>(kind);
  header.direction = static_cast<uint8_t>(direction);
  header.call_id = call_id;
  uint64_t length = sizeof(header);
  if (kind == wire::PacketKind::kError) {
    const std::string& text = status.message();
    const size_t bytes = std::min<size_t>(text.size(), wire::kMaxErrorMessageBytes);
    header.status_code = static_cast<int32_t>(status.code());
    header.payload_bytes = static_cast<uint32_t>(bytes);
    std::memcpy(packet.data() + sizeof(header), text.data(), bytes);
    length += bytes;
  }
  std::memcpy(packet.data(), &header, sizeof(header));
  return PostPacketLocked(std::move(packet), length, kind == wire::PacketKind::kCredit);
}

Status Connection::SendMessageLocked(Call& call, wire::Direction direction, std::string_view method,
                                     std::span<const ConstSlice> slices) {
  ARTUNE_RETURN_IF_ERROR(MeasureMessageLocked(direction, method, slices));
  const MessagePlan plan = PlanMessage(send_sizes_, call.config);
  MessageHeaders headers{call.id, direction, static_cast<uint32_t>(slices.size()),
                         static_cast<uint8_t>(method.size()),
                         call.one_way ? wire::kFlagOneWay : uint8_t{0}};
  for (const EagerPacket& eager : plan.eager_packets) {
    ARTUNE_RETURN_IF_ERROR(SendEagerPacketLocked(eager, slices, method, headers));
  }
  size_t next = 0;
  while (next < plan.rendezvous.size()) {
    ARTUNE_ASSIGN_OR_RETURN(const size_t announced, SendAnnounceLocked(call, plan.rendezvous, next,
                                                                       slices, method, headers));
    next += announced;
  }

  // A message without slices still needs one packet (it carries the method).
  if (plan.eager_packets.empty() && plan.rendezvous.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
    wire::PacketHeader header = headers.Next(wire::PacketKind::kEager, 0);
    header.payload_bytes = header.method_bytes;
    std::memcpy(packet.data(), &header, sizeof(header));
    std::memcpy(packet.data() + sizeof(header), method.data(), header.method_bytes);
    ARTUNE_RETURN_IF_ERROR(
        PostPacketLocked(std::move(packet), sizeof(header) + header.method_bytes, false));
  }
  return Status::Ok();
}

wire::PacketHeader Connection::MessageHeaders::Next(wire::PacketKind kind, uint32_t entries) {
  wire::PacketHeader header{};
  header.kind = static_cast<uint8_t>(kind);
  header.direction = static_cast<uint8_t>(direction);
  header.call_id = call_id;
  header.slice_count = slice_count;
  header.entry_count = entries;
  header.method_bytes = method_sent ? 0 : method_bytes;
  header.flags = flags;
  method_sent = true;
  return header;
}

Status Connection::MeasureMessageLocked(wire::Direction direction, std::string_view method,
                                        std::span<const ConstSlice> slices) {
  if (method.size() > wire::kMaxMethodBytes) {
    return Status::InvalidArgument("method name of " + std::to_string(method.size()) +
                                   " bytes (limit " + std::to_string(wire::kMaxMethodBytes) + ")");
  }
  if (direction == wire::Direction::kRequest && method.empty()) {
    return Status::InvalidArgument("empty method name");
  }
  if (slices.size() > wire::kMaxSlicesPerMessage) {
    return Status::InvalidArgument("message of " + std::to_string(slices.size()) +
                                   " slices (limit " + std::to_string(wire::kMaxSlicesPerMessage) +
                                   ")");
  }
  std::vector<uint64_t>& sizes = send_sizes_;
  sizes.clear();
  uint64_t total = 0;
  for (const ConstSlice& slice : slices) {
    if (slice.size() > wire::kMaxSliceBytes) {
      return Status::InvalidArgument("slice of " + std::to_string(slice.size()) + " bytes (limit " +
                                     std::to_string(wire::kMaxSliceBytes) + ")");
    }
    sizes.push_back(slice.size());
    total += slice.size();
  }
  if (total > wire::kMaxMessageBytes) {
    return Status::InvalidArgument("message of " + std::to_string(total) + " bytes (limit " +
                                   std::to_string(wire::kMaxMessageBytes) + ")");
  }
  return Status::Ok();
}

Status Connection::SendEagerPacketLocked(const EagerPacket& eager,
                                         std::span<const ConstSlice> slices,
                                         std::string_view method, MessageHeaders& headers) {
  // Entries, then the method (first packet), then the slices' bytes.
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  const auto kind =
      eager.slice_indices.size() > 1 ? wire::PacketKind::kCoalescedEager : wire::PacketKind::kEager;
  wire::PacketHeader header = headers.Next(kind, static_cast<uint32_t>(eager.slice_indices.size()));
  std::byte* out = packet.data() + sizeof(header);
  for (uint32_t index : eager.slice_indices) {
    const wire::SliceEntry entry{index, static_cast<uint32_t>(slices[index].size())};
    std::memcpy(out, &entry, sizeof(entry));
    out += sizeof(entry);
  }
  std::byte* payload = out;
  std::memcpy(out, method.data(), header.method_bytes);
  out += header.method_bytes;
  for (uint32_t index : eager.slice_indices) {
    if (!slices[index].empty()) std::memcpy(out, slices[index].data(), slices[index].size());
    out += slices[index].size();
    stats_.CountSlice(eager.protocol, slices[index].size());
  }
  header.payload_bytes = static_cast<uint32_t>(out - payload);
  std::memcpy(packet.data(), &header, sizeof(header));
  // The length before the move: argument evaluation order is unspecified, and
  // clang moves the buffer out first (found by tests/transport/fuzz).
  const uint64_t length = static_cast<uint64_t>(out - packet.data());
  return PostPacketLocked(std::move(packet), length, false);
}

Result<size_t> Connection::SendAnnounceLocked(Call& call,
                                              std::span<const RendezvousTransfer> transfers,
                                              size_t next, std::span<const ConstSlice> slices,
                                              std::string_view method, MessageHeaders& headers) {
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  const uint64_t method_bytes = headers.method_sent ? 0 : method.size();
  const uint64_t room = (geometry_.buffer_bytes - sizeof(wire::PacketHeader) - method_bytes) /
                        sizeof(wire::RendezvousEntry);
  const size_t count = std::min<size_t>(room, transfers.size() - next);
  wire::PacketHeader header =
      headers.Next(wire::PacketKind::kAnnounce, static_cast<uint32_t>(count));
  std::byte* out = packet.data() + sizeof(header);
  for (size_t i = next; i < next + count; ++i) {
    ARTUNE_ASSIGN_OR_RETURN(const wire::RendezvousEntry entry,
                            OfferSliceLocked(call, transfers[i], slices[transfers[i].slice_index]));
    std::memcpy(out, &entry, sizeof(entry));
    out += sizeof(entry);
  }
  std::memcpy(out, method.data(), method_bytes);
  out += method_bytes;
  header.payload_bytes = static_cast<uint32_t>(method_bytes);
  std::memcpy(packet.data(), &header, sizeof(header));
  call.awaiting_fin = true;
  // The length before the move: argument evaluation order is unspecified, and
  // clang moves the buffer out first (found by tests/transport/fuzz).
  const uint64_t length = static_cast<uint64_t>(out - packet.data());
  ARTUNE_RETURN_IF_ERROR(PostPacketLocked(std::move(packet), length, false));
  return count;
}

Result<wire::RendezvousEntry> Connection::OfferSliceLocked(Call& call,
                                                           const RendezvousTransfer& transfer,
                                                           ConstSlice slice) {
  std::optional<Registration> registration = allocator_.Lookup(slice.data(), slice.size());
  const std::byte* source = slice.data();
  if (!registration) {
    ARTUNE_ASSIGN_OR_RETURN(Buffer staging, allocator_.Allocate(slice.size()));
    std::memcpy(staging.data(), slice.data(), slice.size());
    source = staging.data();
    registration = allocator_.Lookup(source, slice.size());
    call.sent_owned.push_back(std::move(staging));
  }
  ARTUNE_ASSIGN_OR_RETURN(uint32_t offer,
                          endpoint_->Expose(source, slice.size(), registration->keys.lkey));
  call.offers.push_back(offer);
  wire::RendezvousEntry entry{};
  entry.slice_index = transfer.slice_index;
  entry.rkey = offer;
  entry.remote_addr = reinterpret_cast<uint64_t>(source);
  entry.length = slice.size();
  entry.chunk_bytes = transfer.chunk_bytes;
  stats_.CountSlice(transfer.protocol, slice.size());
  return entry;
}

}  // namespace artune::transport
