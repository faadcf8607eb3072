// Connection, receive side: completions, packet validation, reassembly and the
// pipelined rendezvous reads. Every length from the peer is checked against the
// packet, the message and the limits in wire.h before memory is allocated.
#include <algorithm>
#include <cstring>

#include "connection.h"
#include "engine_access.h"

namespace artune::transport {
namespace {

Status Malformed(const std::string& peer, const std::string& what) {
  return Status::ProtocolError("malformed packet from " + peer + ": " + what +
                               "; dropping the connection");
}

}  // namespace

void Connection::OnCompletion(const fabric::Completion& completion) {
  // Callback lists reused by the completions of this thread: their room is kept
  // between completions, so queuing a call's end allocates nothing. A stack, since
  // a callback may run a call whose completion is handled on this thread too.
  static thread_local std::vector<Callbacks> spare_callback_lists;
  Callbacks callbacks;
  if (!spare_callback_lists.empty()) {
    callbacks = std::move(spare_callback_lists.back());
    spare_callback_lists.pop_back();
  }
  {
    std::lock_guard lock(mutex_);
    switch (completion.kind) {
      case fabric::CompletionKind::kRecv:
        OnRecv(completion, callbacks);
        break;
      case fabric::CompletionKind::kRead:
        OnRead(completion, callbacks);
        break;
      case fabric::CompletionKind::kDisconnected:
        OnDisconnected(completion.status, callbacks);
        break;
    }
  }
  RunCallbacks(callbacks);
  spare_callback_lists.push_back(std::move(callbacks));
}

void Connection::RunCallbacks(Callbacks& callbacks) {
  for (Callback& callback : callbacks) {
    if (auto* end = std::get_if<CallEnd>(&callback)) {
      end->done(std::move(end->result));
    } else if (auto* request = std::get_if<IncomingRequest>(&callback)) {
      on_request_(shared_from_this(), std::move(*request));
    } else {
      std::get<std::function<void()>>(callback)();
    }
  }
  callbacks.clear();
}

void Connection::OnRecv(const fabric::Completion& completion, Callbacks& callbacks) {
  if (disconnected_ || !completion.status.ok() || completion.wr_id >= recv_buffers_.size()) {
    return;
  }
  Buffer& buffer = recv_buffers_[completion.wr_id];
  ++packets_received_;
  bool credit_packet = false;
  if (completion.length >= sizeof(wire::PacketHeader)) {
    // A credit packet on the spare, unless it says it took a regular credit.
    credit_packet = static_cast<wire::PacketKind>(static_cast<uint8_t>(buffer.data()[0])) ==
                        wire::PacketKind::kCredit &&
                    (static_cast<uint8_t>(buffer.data()[2]) & wire::kFlagCreditOnRegular) == 0;
  }
  Status handled = HandlePacket(buffer.data(), completion.length, callbacks);
  if (!handled.ok()) {
    FailLocked(handled);
    return;
  }
  // Re-post before returning the credit: the peer may use it at once.
  std::optional<Registration> registration = allocator_.Lookup(buffer.data(), buffer.size());
  Status reposted =
      endpoint_->PostRecv(buffer.data(), buffer.size(), registration->keys.lkey, completion.wr_id);
  if (!reposted.ok()) return;  // closing: kDisconnected follows
  // The fabric may re-post faster than the peer should send (tcp does), so check
  // the credit rules here too: a peer that ignores them is dropped.
  if (credit_packet ? spare_to_return_ : credits_to_return_ >= geometry_.buffer_count) {
    FailLocked(Malformed(peer(), "more packets than it had credits for (flow control)"));
    return;
  }
  if (credit_packet) {
    spare_to_return_ = true;
  } else {
    ++credits_to_return_;
  }
  Status flushed = FlushPendingLocked();
  if (!flushed.ok()) {
    FailLocked(flushed);
    return;
  }
  MaybeReturnCreditsLocked();
}

Status Connection::HandlePacket(const std::byte* data, uint64_t length, Callbacks& callbacks) {
  // The peer's name only on the error paths: a copy of it per packet was a heap
  // allocation per packet on every call (bench/side-by-side.md, 2026-11-27).
  if (length < sizeof(wire::PacketHeader)) {
    return Malformed(peer(), "packet of " + std::to_string(length) + " bytes");
  }
  wire::PacketHeader header;
  std::memcpy(&header, data, sizeof(header));
  ARTUNE_RETURN_IF_ERROR(CheckPacketShape(header, length));
  const auto kind = static_cast<wire::PacketKind>(header.kind);
  ARTUNE_RETURN_IF_ERROR(TakeFlowControl(header));
  if (header.oneway_done > 0) ARTUNE_RETURN_IF_ERROR(TakeOnewayDone(header.oneway_done, callbacks));
  if (kind == wire::PacketKind::kCredit) return Status::Ok();

  const auto direction = static_cast<wire::Direction>(header.direction);
  const wire::Direction incoming =
      role_ == Role::kClient ? wire::Direction::kResponse : wire::Direction::kRequest;
  if (kind == wire::PacketKind::kFin) {
    if (direction == incoming) return Malformed(peer(), "fin for a message it sent");
    HandleFin(header.call_id);
    return Status::Ok();
  }
  if (direction != incoming) {
    return Malformed(peer(), std::string(wire::PacketKindName(kind)) + " in the wrong direction");
  }
  if (kind == wire::PacketKind::kError && role_ == Role::kServer) {
    return Malformed(peer(), "error packet from a client");
  }

  Call* call = nullptr;
  ARTUNE_RETURN_IF_ERROR(FindIncomingCall(header, call));
  if (call == nullptr) return Status::Ok();  // a late response, dropped
  const std::byte* entries = data + sizeof(header);
  const uint64_t entry_bytes = kind == wire::PacketKind::kAnnounce ? sizeof(wire::RendezvousEntry)
                                                                   : sizeof(wire::SliceEntry);
  const std::byte* payload = entries + header.entry_count * entry_bytes;
  if (kind == wire::PacketKind::kError) return HandleErrorPacket(*call, header, payload, callbacks);

  ARTUNE_RETURN_IF_ERROR(BeginAssembly(*call, header, payload));
  if (kind == wire::PacketKind::kAnnounce) {
    ARTUNE_RETURN_IF_ERROR(HandleAnnounce(*call, header, entries, callbacks));
  } else {
    ARTUNE_RETURN_IF_ERROR(HandleSlices(*call, header, entries, payload, callbacks));
  }
  MaybeFinishAssembly(*call, callbacks);
  return Status::Ok();
}

Status Connection::CheckPacketShape(const wire::PacketHeader& header, uint64_t length) const {
  const auto kind = static_cast<wire::PacketKind>(header.kind);
  if (header.kind < 1 || header.kind > 6) {
    return Malformed(peer(), "unknown packet kind " + std::to_string(header.kind));
  }
  if (header.direction > 1) {
    return Malformed(peer(), "unknown direction " + std::to_string(header.direction));
  }
  const bool data_kind = kind == wire::PacketKind::kEager ||
                         kind == wire::PacketKind::kCoalescedEager ||
                         kind == wire::PacketKind::kAnnounce;
  const uint64_t entry_bytes = kind == wire::PacketKind::kAnnounce ? sizeof(wire::RendezvousEntry)
                                                                   : sizeof(wire::SliceEntry);
  const uint64_t body = length - sizeof(header);
  if (!data_kind && header.entry_count != 0) {
    return Malformed(peer(), std::string(wire::PacketKindName(kind)) + " packet with entries");
  }
  if (header.entry_count > body / entry_bytes ||
      header.entry_count * entry_bytes + header.payload_bytes != body) {
    return Malformed(peer(), "entry count " + std::to_string(header.entry_count) +
                                 " and payload of " + std::to_string(header.payload_bytes) +
                                 " bytes do not match a packet of " + std::to_string(length));
  }
  if (header.method_bytes > header.payload_bytes) {
    return Malformed(peer(), "method longer than the payload");
  }
  return Status::Ok();
}

Status Connection::TakeFlowControl(const wire::PacketHeader& header) {
  // Flow control and config epoch travel on every packet.
  if (header.credits_returned > geometry_.buffer_count - send_credits_) {
    return Malformed(peer(), "returned " + std::to_string(header.credits_returned) +
                                 " credits, more than it was given");
  }
  send_credits_ += header.credits_returned;
  if (header.flags & wire::kFlagSpareCreditReturned) spare_available_ = true;
  if (header.config_epoch > peer_epoch_.load(std::memory_order_relaxed)) {
    peer_epoch_.store(header.config_epoch, std::memory_order_relaxed);
  }
  return Status::Ok();
}

void Connection::HandleFin(uint64_t call_id) {
  auto it = calls_.find(call_id);
  if (it == calls_.end() || !it->second->awaiting_fin) return;  // stale
  Call& call = *it->second;
  ReleaseSentLocked(call);
  if (call.one_way && call.state == wire::CallState::kAwaitingResponse) {
    // The server read the request; done once it reports it handled.
    Transition(call, wire::CallState::kDone, "one-way request read");
    oneway_sent_.push_back(std::move(call.done));
  }
  if (call.state == wire::CallState::kAwaitingFin) {
    Transition(call, wire::CallState::kDone, "peer read the response");
  }
  MaybeEraseLocked(call_id);
}

Status Connection::TakeOnewayDone(uint32_t count, Callbacks& callbacks) {
  // The server counts a call only after it has its request (a kFin first when it
  // read one), and packets arrive in order: `count` of oneway_sent_ are over.
  if (role_ == Role::kServer || count > oneway_sent_.size()) {
    return Malformed(peer(), "reported " + std::to_string(count) +
                                 " one-way calls handled, more than it was sent");
  }
  for (uint32_t i = 0; i < count; ++i) {
    stats_.CallCompleted();
    callbacks.emplace_back(CallEnd{std::move(oneway_sent_.front()), Message()});
    oneway_sent_.pop_front();
  }
  last_activity_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

Status Connection::FindIncomingCall(const wire::PacketHeader& header, Call*& call) {
  auto it = calls_.find(header.call_id);
  if (role_ == Role::kServer) {
    if (it == calls_.end()) {
      if (calls_.size() >= geometry_.max_outstanding) {
        return Malformed(peer(), "more than " + std::to_string(geometry_.max_outstanding) +
                                     " calls in flight (max_outstanding)");
      }
      it = AddCallLocked(header.call_id);
      Call& added = *it->second;
      added.state = wire::CallState::kReceivingRequest;
      added.config = config_;
      added.one_way = (header.flags & wire::kFlagOneWay) != 0;
      last_activity_ = std::chrono::steady_clock::now();
      stats_.CallStarted();
    } else if (it->second->state != wire::CallState::kReceivingRequest) {
      return Malformed(peer(), "request data for call " + std::to_string(header.call_id) +
                                   " after its request was complete");
    }
  } else {
    const bool live = it != calls_.end() && !it->second->one_way &&
                      (it->second->state == wire::CallState::kAwaitingResponse ||
                       it->second->state == wire::CallState::kReceivingResponse);
    if (!live) {
      // A late response (the call timed out or failed): drop it, but let the server
      // release what it announced.
      if (static_cast<wire::PacketKind>(header.kind) == wire::PacketKind::kAnnounce) {
        return SendControlLocked(wire::PacketKind::kFin, wire::Direction::kResponse, header.call_id,
                                 Status::Ok());
      }
      return Status::Ok();
    }
  }
  call = it->second.get();
  return Status::Ok();
}

Status Connection::HandleErrorPacket(Call& call, const wire::PacketHeader& header,
                                     const std::byte* payload, Callbacks& callbacks) {
  const int code = header.status_code;
  if (code <= 0 || code > static_cast<int>(ErrorCode::kInternal) ||
      header.payload_bytes > wire::kMaxErrorMessageBytes) {
    return Malformed(peer(), "error packet with code " + std::to_string(code));
  }
  std::string text(reinterpret_cast<const char*>(payload), header.payload_bytes);
  CompleteCallLocked(call, Status(static_cast<ErrorCode>(code), std::move(text)), callbacks);
  MaybeEraseLocked(call.id);
  return Status::Ok();
}

Status Connection::BeginAssembly(Call& call, const wire::PacketHeader& header,
                                 const std::byte* payload) {
  Assembly& in = call.in;
  if (in.started) {
    if (header.slice_count != in.slice_count || header.method_bytes != 0) {
      return Malformed(peer(), "packet disagrees with its message's first packet");
    }
    return Status::Ok();
  }
  if (header.slice_count > wire::kMaxSlicesPerMessage) {
    return Malformed(peer(), "message of " + std::to_string(header.slice_count) +
                                 " slices (limit " + std::to_string(wire::kMaxSlicesPerMessage) +
                                 ")");
  }
  if ((role_ == Role::kServer) != (header.method_bytes > 0)) {
    return Malformed(peer(), role_ == Role::kServer ? "request without a method name"
                                                    : "response with a method name");
  }
  in.started = true;
  in.slice_count = header.slice_count;
  in.have.assign(in.slice_count, 0);
  in.slices.assign(in.slice_count, ConstSlice());
  recycler_->Prepare(in.message);
  in.method.assign(reinterpret_cast<const char*>(payload), header.method_bytes);
  return Status::Ok();
}

Status Connection::HandleSlices(Call& call, const wire::PacketHeader& header,
                                const std::byte* entries, const std::byte* payload,
                                Callbacks& /*callbacks*/) {
  Assembly& in = call.in;
  const uint64_t data_bytes = header.payload_bytes - header.method_bytes;
  uint64_t sum = 0;
  for (uint32_t i = 0; i < header.entry_count; ++i) {
    wire::SliceEntry entry;
    std::memcpy(&entry, entries + i * sizeof(entry), sizeof(entry));
    if (entry.slice_index >= in.slice_count || in.have[entry.slice_index]) {
      return Malformed(
          peer(), "slice index " + std::to_string(entry.slice_index) + " out of range or repeated");
    }
    in.have[entry.slice_index] = 1;
    sum += entry.length;
  }
  if (sum != data_bytes) {
    return Malformed(peer(), "eager entries of " + std::to_string(sum) + " bytes, payload of " +
                                 std::to_string(data_bytes));
  }
  // Copy the data out of the receive buffer (it is re-posted right after).
  std::shared_ptr<Buffer> storage;
  if (data_bytes > 0) {
    Result<Buffer> buffer = allocator_.Allocate(data_bytes);
    if (!buffer.ok()) return buffer.status();
    storage = recycler_->Hold(std::move(buffer).value());
    std::memcpy(storage->data(), payload + header.method_bytes, data_bytes);
    internal::EngineAccess::KeepAlive(in.message, storage);
  }
  const Protocol protocol = header.entry_count > 1 ? Protocol::kCoalescedEager : Protocol::kEager;
  uint64_t offset = 0;
  for (uint32_t i = 0; i < header.entry_count; ++i) {
    wire::SliceEntry entry;
    std::memcpy(&entry, entries + i * sizeof(entry), sizeof(entry));
    in.slices[entry.slice_index] =
        entry.length == 0 ? ConstSlice() : ConstSlice(storage->data() + offset, entry.length);
    offset += entry.length;
    ++in.received;
    stats_.CountSlice(protocol, entry.length);
  }
  return Status::Ok();
}

Status Connection::HandleAnnounce(Call& call, const wire::PacketHeader& header,
                                  const std::byte* entries, Callbacks& callbacks) {
  Assembly& in = call.in;
  if (role_ == Role::kClient && call.state == wire::CallState::kAwaitingResponse) {
    Transition(call, wire::CallState::kReceivingResponse, "response announced");
  }
  for (uint32_t i = 0; i < header.entry_count; ++i) {
    wire::RendezvousEntry entry;
    std::memcpy(&entry, entries + i * sizeof(entry), sizeof(entry));
    if (entry.slice_index >= in.slice_count || in.have[entry.slice_index]) {
      return Malformed(peer(), "announced slice index " + std::to_string(entry.slice_index) +
                                   " out of range or repeated");
    }
    if (entry.length == 0 || entry.length > wire::kMaxSliceBytes) {
      return Malformed(peer(), "announced slice of " + std::to_string(entry.length) +
                                   " bytes (limit " + std::to_string(wire::kMaxSliceBytes) + ")");
    }
    // Chunks of at least 4 KiB bound the number of reads per slice.
    if (entry.chunk_bytes == 0 || entry.chunk_bytes > entry.length ||
        entry.chunk_bytes < std::min(entry.length, wire::kMinChunkBytes)) {
      return Malformed(peer(), "chunk size " + std::to_string(entry.chunk_bytes) +
                                   " for a slice of " + std::to_string(entry.length));
    }
    in.announced_bytes += entry.length;
    if (in.announced_bytes > wire::kMaxMessageBytes) {
      return Malformed(peer(), "message larger than " + std::to_string(wire::kMaxMessageBytes));
    }
    in.have[entry.slice_index] = 1;
    in.had_rendezvous = true;
    if (!call.failure.ok()) {
      ++in.received;  // the call already failed: do not read, just settle the slice
      continue;
    }
    // The destination comes when the window lets this slice's reads start.
    auto transfer = std::make_unique<Transfer>();
    transfer->entry = entry;
    transfer->waiting = true;
    in.transfers.push_back(std::move(transfer));
    waiting_transfers_.push_back({call.id, in.transfers.size() - 1});
    ++in.transfers_waiting;
  }
  if (in.had_rendezvous && !in.read_clock_started) {
    in.read_clock_started = true;
    in.announced_at = std::chrono::steady_clock::now();
    ArmReadWatchLocked(call.config.timeout_ms);
  }
  StartWaitingTransfersLocked(callbacks, &call);
  return Status::Ok();
}

void Connection::MaybeFinishAssembly(Call& call, Callbacks& callbacks) {
  Assembly& in = call.in;
  if (!in.started || in.received < in.slice_count || in.reads_in_flight > 0 ||
      in.transfers_waiting > 0) {
    return;
  }
  // Once per message: a server's request goes to its handler once.
  if (role_ == Role::kServer && call.state != wire::CallState::kReceivingRequest) return;
  if (call.failure.ok()) {
    // Transfers abandoned by a failure never complete; a live one must finish.
    for (const auto& transfer : in.transfers) {
      if (transfer->destination) return;
    }
  }
  const wire::Direction direction =
      role_ == Role::kClient ? wire::Direction::kResponse : wire::Direction::kRequest;
  if (in.had_rendezvous) {
    Status fin = SendControlLocked(wire::PacketKind::kFin, direction, call.id, Status::Ok());
    if (!fin.ok()) {
      FailLocked(fin);
      return;
    }
  }
  if (role_ == Role::kClient) {
    if (!call.failure.ok()) {
      CompleteCallLocked(call, call.failure, callbacks);
    } else {
      for (const ConstSlice& slice : in.slices) internal::EngineAccess::AddSlice(in.message, slice);
      CompleteCallLocked(call, std::move(in.message), callbacks);
    }
    in.message = Message();
    MaybeEraseLocked(call.id);
    return;
  }
  if (!call.failure.ok()) {
    Transition(call, wire::CallState::kHandling, "request failed");
    Transition(call, wire::CallState::kSending, "error response");
    Status sent = SendControlLocked(wire::PacketKind::kError, wire::Direction::kResponse, call.id,
                                    call.failure);
    stats_.CallFailed();
    Transition(call, wire::CallState::kDone, "error sent");
    MaybeEraseLocked(call.id);
    if (!sent.ok()) FailLocked(sent);
    return;
  }
  for (const ConstSlice& slice : in.slices) internal::EngineAccess::AddSlice(in.message, slice);
  Transition(call, wire::CallState::kHandling, "request complete");
  callbacks.emplace_back(IncomingRequest{call.id, std::move(in.method),
                                         std::make_shared<Message>(std::move(in.message))});
}

void Connection::OnDisconnected(const Status& why, Callbacks& callbacks) {
  disconnected_ = true;
  closed_ = true;
  Status reason = close_reason_.ok() ? why : close_reason_;
  if (reason.ok()) reason = Status::Unavailable("connection to " + peer() + " closed");
  if (reason.code() == ErrorCode::kIoError) reason = Status::Unavailable(reason.message());
  // The peer closed a connection no call was using (a client that retired it or
  // exited): an orderly end, not a broken connection, for the closed sink's count.
  const bool orderly =
      calls_.empty() && close_reason_.ok() && reason.code() == ErrorCode::kUnavailable;
  std::vector<uint64_t> ids;
  for (auto& [id, call] : calls_) ids.push_back(id);
  for (uint64_t id : ids) {
    Call& call = *calls_[id];
    call.in.reads_in_flight = 0;
    FailCallLocked(call, reason, callbacks);
  }
  calls_.clear();
  // One-way calls the server never reported handled fail with it: it may not
  // have run them.
  for (auto& done : oneway_sent_) {
    stats_.CallFailed();
    callbacks.emplace_back(CallEnd{std::move(done), reason});
  }
  oneway_sent_.clear();
  reads_.clear();
  waiting_transfers_.clear();
  reading_bytes_ = 0;
  pending_.clear();
  recv_buffers_.clear();
  if (orderly) reason = Status::Cancelled(reason.message() + " (no call in flight)");
  if (on_closed_) {
    callbacks.push_back(
        [sink = on_closed_, self = shared_from_this(), reason] { sink(*self, reason); });
  }
}

}  // namespace artune::transport
