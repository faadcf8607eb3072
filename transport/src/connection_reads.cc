// Connection, rendezvous reads: the read window (destinations allocated as reads
// start, at most kReadWindowBytes being read per connection), the pipelined chunk
// reads, their completions, and the read watch that drops a connection whose
// announced messages are not read within timeout_ms.
#include <algorithm>

#include "connection.h"
#include "engine_access.h"

namespace artune::transport {

void Connection::StartWaitingTransfersLocked(Callbacks& callbacks, const Call* current) {
  std::vector<uint64_t> settled;  // calls whose last waiting transfer was settled here
  while (!waiting_transfers_.empty() && !disconnected_) {
    const WaitingTransfer next = waiting_transfers_.front();
    auto it = calls_.find(next.call_id);
    // Stale entries (a call settled or erased since) are skipped.
    if (it == calls_.end() || next.transfer >= it->second->in.transfers.size() ||
        !it->second->in.transfers[next.transfer]->waiting) {
      waiting_transfers_.pop_front();
      continue;
    }
    Call& call = *it->second;
    Transfer& transfer = *call.in.transfers[next.transfer];
    const bool live = call.state == wire::CallState::kReceivingRequest ||
                      call.state == wire::CallState::kReceivingResponse;
    if (live && call.failure.ok()) {
      // One slice larger than the window still goes, alone.
      if (reading_bytes_ > 0 && reading_bytes_ + transfer.entry.length > kReadWindowBytes) break;
      Result<Buffer> destination = allocator_.Allocate(transfer.entry.length);
      if (destination.ok()) {
        waiting_transfers_.pop_front();
        transfer.waiting = false;
        --call.in.transfers_waiting;
        transfer.destination = std::move(destination).value();
        transfer.in_window = true;
        reading_bytes_ += transfer.entry.length;
        PostReads(call, transfer, next.transfer);
        continue;
      }
      // Not the peer's fault: the call fails, the connection stays.
      call.failure = destination.status();
    }
    waiting_transfers_.pop_front();
    transfer.waiting = false;
    --call.in.transfers_waiting;
    ++call.in.received;
    if (call.in.transfers_waiting == 0 && &call != current) settled.push_back(call.id);
  }
  for (uint64_t id : settled) {
    auto it = calls_.find(id);
    if (it == calls_.end()) continue;
    Call& call = *it->second;
    if (call.state == wire::CallState::kReceivingRequest ||
        call.state == wire::CallState::kReceivingResponse) {
      MaybeFinishAssembly(call, callbacks);
    } else {
      SettleDeadCallLocked(call);
    }
  }
}

void Connection::DropWaitingTransfersLocked(Call& call) {
  for (auto& transfer : call.in.transfers) {
    if (!transfer->waiting) continue;
    transfer->waiting = false;  // its queue entry is now stale
    ++call.in.received;
  }
  call.in.transfers_waiting = 0;
}

void Connection::LeaveWindowLocked(Transfer& transfer) {
  if (!transfer.in_window) return;
  transfer.in_window = false;
  reading_bytes_ -= std::min(reading_bytes_, transfer.entry.length);
}

void Connection::SettleDeadCallLocked(Call& call) {
  DropWaitingTransfersLocked(call);
  if (call.in.reads_in_flight > 0) return;  // OnRead comes back here when they drain
  if (call.in.had_rendezvous && !disconnected_) {
    Status fin = SendControlLocked(
        wire::PacketKind::kFin,
        role_ == Role::kClient ? wire::Direction::kResponse : wire::Direction::kRequest, call.id,
        Status::Ok());
    if (!fin.ok()) FailLocked(fin);
  }
  MaybeEraseLocked(call.id);
}

void Connection::PostReads(Call& call, Transfer& transfer, size_t transfer_index) {
  const wire::RendezvousEntry& entry = transfer.entry;
  const uint64_t chunk_count = (entry.length + entry.chunk_bytes - 1) / entry.chunk_bytes;
  const uint32_t depth = std::max<uint32_t>(1, call.config.pipeline_depth);
  std::optional<Registration> registration =
      allocator_.Lookup(transfer.destination.data(), transfer.destination.size());
  while (transfer.in_flight < depth && transfer.next_chunk < chunk_count && call.failure.ok()) {
    ChunkRange chunk;
    chunk.offset = transfer.next_chunk * entry.chunk_bytes;
    chunk.length = std::min(entry.chunk_bytes, entry.length - chunk.offset);
    const uint64_t read_id = next_read_id_++;
    reads_[read_id] = {call.id, transfer_index, chunk};
    const fabric::RemoteRegion remote{entry.remote_addr + chunk.offset, entry.rkey, chunk.length};
    Status posted = endpoint_->PostRead(remote, transfer.destination.data() + chunk.offset,
                                        registration->keys.lkey, read_id);
    if (!posted.ok()) {
      reads_.erase(read_id);
      if (call.failure.ok()) call.failure = posted;
      return;  // the connection is closing; kDisconnected fails the call
    }
    ++transfer.next_chunk;
    ++transfer.in_flight;
    ++call.in.reads_in_flight;
  }
}

void Connection::OnRead(const fabric::Completion& completion, Callbacks& callbacks) {
  auto target = reads_.find(completion.wr_id);
  if (target == reads_.end()) return;
  const ReadTarget read = target->second;
  reads_.erase(target);
  auto it = calls_.find(read.call_id);
  if (it == calls_.end()) return;
  Call& call = *it->second;
  Transfer& transfer = *call.in.transfers[read.transfer];
  --transfer.in_flight;
  --call.in.reads_in_flight;
  if (!completion.status.ok()) {
    if (call.failure.ok()) call.failure = completion.status;
    // A refused read means the peer announced memory it does not have.
    if (!disconnected_ && completion.status.code() == ErrorCode::kProtocolError) {
      FailLocked(completion.status);
      return;
    }
  } else {
    ++transfer.done_chunks;
  }
  const uint64_t chunk_count =
      (transfer.entry.length + transfer.entry.chunk_bytes - 1) / transfer.entry.chunk_bytes;
  const bool live = call.state == wire::CallState::kReceivingRequest ||
                    call.state == wire::CallState::kReceivingResponse;
  if (transfer.done_chunks == chunk_count) {
    LeaveWindowLocked(transfer);
    const Protocol protocol = chunk_count > 1 || transfer.entry.chunk_bytes < transfer.entry.length
                                  ? Protocol::kChunkedRendezvous
                                  : Protocol::kRendezvousRead;
    stats_.CountSlice(protocol, transfer.entry.length);
    auto storage = recycler_->Hold(std::move(transfer.destination));
    call.in.slices[transfer.entry.slice_index] = ConstSlice(storage->data(), storage->size());
    internal::EngineAccess::KeepAlive(call.in.message, std::move(storage));
    ++call.in.received;
  } else if (live && call.failure.ok()) {
    PostReads(call, transfer, read.transfer);
  } else if (transfer.in_flight == 0 && transfer.destination) {
    // The call failed half-way: this slice is settled without its data.
    LeaveWindowLocked(transfer);
    transfer.destination = Buffer();
    ++call.in.received;
  }
  if (!live) {
    // Timed out or failed: once the reads drain, release the peer and forget the call.
    SettleDeadCallLocked(call);  // may erase it
    StartWaitingTransfersLocked(callbacks, nullptr);
    return;
  }
  StartWaitingTransfersLocked(callbacks, &call);
  MaybeFinishAssembly(call, callbacks);
}

void Connection::ArmReadWatchLocked(uint32_t timeout_ms) {
  if (timer_ == nullptr || read_watch_armed_ || disconnected_) return;
  read_watch_armed_ = true;
  std::weak_ptr<Connection> weak = weak_from_this();
  timer_->Add(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms), [weak] {
    if (auto self = weak.lock()) self->OnReadWatch();
  });
}

void Connection::OnReadWatch() {
  std::lock_guard lock(mutex_);
  read_watch_armed_ = false;
  if (disconnected_) return;
  const auto now = std::chrono::steady_clock::now();
  auto next_check = std::chrono::steady_clock::time_point::max();
  for (const auto& [id, call] : calls_) {
    const Assembly& in = call->in;
    if (!in.read_clock_started || (in.reads_in_flight == 0 && in.transfers_waiting == 0)) continue;
    const auto due = in.announced_at + std::chrono::milliseconds(call->config.timeout_ms);
    if (due <= now) {
      FailLocked(
          Status::Timeout("the slices " + peer() + " announced for call " + std::to_string(id) +
                          " were not read within " + std::to_string(call->config.timeout_ms) +
                          " ms (timeout_ms); dropping the connection, which frees their memory"));
      return;
    }
    next_check = std::min(next_check, due);
  }
  if (next_check == std::chrono::steady_clock::time_point::max()) return;
  read_watch_armed_ = true;
  std::weak_ptr<Connection> weak = weak_from_this();
  timer_->Add(next_check, [weak] {
    if (auto self = weak.lock()) self->OnReadWatch();
  });
}

}  // namespace artune::transport
