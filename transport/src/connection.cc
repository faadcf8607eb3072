// Connection: lifecycle, call table and state transitions. Sending (packets,
// credits, eager and rendezvous messages) is in connection_send.cc; the receive
// side (packet parsing, reassembly, reads) in connection_receive.cc.
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
      config_epoch_(config_epoch),
      recycler_(internal::MessageRecycler::Create(geometry.max_outstanding)) {}

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
                           std::chrono::steady_clock::time_point deadline, Client::Done caller_done,
                           bool one_way, std::shared_ptr<CallSlots> slots) {
  CallDone done(std::move(caller_done), std::move(slots));
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
      Call& call = *AddCallLocked(id)->second;
      call.state = wire::CallState::kSending;
      call.config = config_;
      call.done = std::move(done);
      call.one_way = one_way;
      stats_.CallStarted();
      Status sent = SendMessageLocked(call, wire::Direction::kRequest, method, request);
      if (!sent.ok()) {
        done = std::move(call.done);
        ReleaseSentLocked(call);
        EraseCallLocked(calls_.find(id));
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
          call.timer_handle = timer_->Add(deadline, weak_from_this(), id);
          call.has_timer = true;
        }
        return;
      }
    }
  }
  if (done) done(std::move(failed));
}

void Connection::OnTimeout(uint64_t call_id) {
  CallDone done;
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
  if (call.done) callbacks.emplace_back(CallEnd{std::move(call.done), std::move(result)});
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
  EraseCallLocked(it);
  last_activity_ = std::chrono::steady_clock::now();
}

Connection::CallTable::iterator Connection::AddCallLocked(uint64_t id) {
  if (spare_calls_.empty()) {
    auto it = calls_.emplace(id, std::make_unique<Call>()).first;
    it->second->id = id;
    return it;
  }
  CallTable::node_type node = std::move(spare_calls_.back());
  spare_calls_.pop_back();
  node.key() = id;
  node.mapped()->id = id;
  // Ids are unique (a client numbers its calls; a server adds only ids it lacks).
  return calls_.insert(std::move(node)).position;
}

void Connection::EraseCallLocked(CallTable::iterator it) {
  // Bounded: more than this many in flight at once is rare, and the rest are freed.
  constexpr size_t kMaxSpareCalls = 64;
  CallTable::node_type node = calls_.extract(it);
  node.mapped()->Recycle();
  if (spare_calls_.size() < kMaxSpareCalls) spare_calls_.push_back(std::move(node));
}

void Connection::Call::Recycle() {
  std::vector<Buffer> kept_sent = std::move(sent_owned);
  std::vector<uint32_t> kept_offers = std::move(offers);
  std::vector<uint8_t> kept_have = std::move(in.have);
  std::vector<ConstSlice> kept_slices = std::move(in.slices);
  // Every other member back to its default, whatever members are added later.
  *this = Call{};
  kept_sent.clear();
  kept_offers.clear();
  kept_have.clear();
  kept_slices.clear();
  sent_owned = std::move(kept_sent);
  offers = std::move(kept_offers);
  in.have = std::move(kept_have);
  in.slices = std::move(kept_slices);
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

}  // namespace artune::transport
