// The shm fabric's endpoint: records into the peer-bound ring (inline, or queued
// when it is full), the inbound ring's dispatch, progress and teardown. Offers,
// grants and reads are in shm_reads.cc.
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fabric/shm/shm_doorbell.h"
#include "fabric/shm/shm_endpoint_internal.h"
#include "fabric/shm/shm_fabric.h"

namespace artune::transport::fabric::shm {
namespace {

// Inbound records handled per endpoint per pass: one busy peer cannot starve others.
constexpr int kRecordBudget = 64;

enum class CmaPolicy { kUse, kOff, kSimulateRefusal };

// ARTUNE_SHM_CMA: unset/"1": process_vm_readv; "0": the owner-side copy from the
// start; "eperm": behave as if process_vm_readv were refused (a test hook).
CmaPolicy CmaFromEnvironment() {
  const char* value = std::getenv("ARTUNE_SHM_CMA");
  if (value == nullptr) return CmaPolicy::kUse;
  if (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0) return CmaPolicy::kOff;
  if (std::strcmp(value, "eperm") == 0) return CmaPolicy::kSimulateRefusal;
  return CmaPolicy::kUse;
}

}  // namespace

ShmEndpoint::ShmEndpoint(ShmFabric& fabric, Link link)
    : fabric_(fabric),
      link_(std::move(link)),
      one_copy_(CmaFromEnvironment() != CmaPolicy::kOff),
      simulate_refusal_(CmaFromEnvironment() == CmaPolicy::kSimulateRefusal) {
  auto* control = static_cast<SegmentControl*>(link_.segment);
  auto* data = static_cast<std::byte*>(link_.segment) + kDataOffset;
  // Ring 0 carries client -> server, ring 1 server -> client.
  const int outbound = link_.is_server ? 1 : 0;
  const int inbound = 1 - outbound;
  out_ = RingWriter(&control->rings[outbound], data + outbound * kRingBytes);
  in_ = RingReader(&control->rings[inbound], data + inbound * kRingBytes);
  // Offer tables go the same way: [0] holds the client's offers.
  auto* tables =
      reinterpret_cast<OfferTable*>(static_cast<std::byte*>(link_.segment) + kOfferTablesOffset);
  publisher_ = OfferPublisher(&tables[outbound]);
  table_reader_ = OfferReader(&tables[inbound]);
  sleeps_per_drain_ = DrainCadence(link_.doorbell);
}

ShmEndpoint::~ShmEndpoint() {
  if (!torn_down_ && link_.socket >= 0) ::close(link_.socket);
  for (int fd : {link_.doorbell, link_.pidfd}) {
    if (fd >= 0) ::close(fd);
  }
  if (link_.segment != nullptr) ::munmap(link_.segment, kSegmentBytes);
}

void ShmEndpoint::Start(CompletionHandler handler) {
  handler_ = std::move(handler);
  started_ = true;
  Status status = fabric_.Watch(this);
  if (!status.ok()) Close(status);
}

// ---------------------------------------------------------------------------
// Output.

Status ShmEndpoint::PostSend(std::span<const SgEntry> sgl) {
  uint64_t total = 0;
  for (const SgEntry& entry : sgl) total += entry.length;
  if (total > kMaxRecordPayload) {
    return Status::InvalidArgument("a send of " + std::to_string(total) +
                                   " bytes exceeds the shm record limit");
  }
  return SendRecord(MakeRecord(RecordKind::kSend, 0, total), sgl);
}

Status ShmEndpoint::SendRecord(const RecordHeader& header, std::span<const SgEntry> payload) {
  std::lock_guard lock(send_mutex_);
  return SendRecordLocked(header, payload);
}

Status ShmEndpoint::SendRecordLocked(const RecordHeader& header, std::span<const SgEntry> payload) {
  if (send_closed_) return Status::Unavailable("connection to " + link_.peer + " is closed");
  if (send_queue_.empty()) {
    Result<bool> written = out_.TryWrite(header, payload);
    if (!written.ok()) {
      BreakLocked(written.status());
      return Status::Unavailable(written.status().message());
    }
    if (*written) {
      PublishLocked();
      return Status::Ok();
    }
  }
  // The ring is full: keep a copy (the caller may reuse its memory on return) for
  // the progress thread to write when the peer frees room.
  OutItem item;
  item.header = header;
  for (const SgEntry& entry : payload) {
    item.payload.insert(item.payload.end(), entry.addr, entry.addr + entry.length);
  }
  send_queue_.push_back(std::move(item));
  if (!has_queued_.exchange(true)) fabric_.Wake();
  return Status::Ok();
}

void ShmEndpoint::PublishLocked() {
  if (out_.Publish()) WakePeer();
}

void ShmEndpoint::WakePeer() {
  // A dead peer (kPeerGone) is the liveness socket's and the pidfd's to report.
  (void)RingDoorbell(link_.doorbell);
}

Result<bool> ShmEndpoint::StreamLocked(OutItem& item) {
  while (item.sent < item.header.length) {
    ARTUNE_ASSIGN_OR_RETURN(const uint64_t free, out_.Free());
    const uint64_t left = item.header.length - item.sent;
    const uint64_t room = free > sizeof(RecordHeader) ? (free - sizeof(RecordHeader)) & ~7ull : 0;
    const uint64_t fragment = std::min({left, kFragmentBytes, room});
    if (fragment == 0 || (fragment < left && fragment < kMinFragment)) return false;
    std::lock_guard lock(item.offer->mutex);
    std::lock_guard region_lock(item.offer->region->mutex);
    if (item.offer->revoked || item.offer->region->deregistered) {
      // Revoked mid-read: the reader's read fails; the rest is never copied.
      ARTUNE_ASSIGN_OR_RETURN(bool refused,
                              out_.TryWrite(MakeRecord(RecordKind::kReadRefused, item.header.id),
                                            std::span<const SgEntry>()));
      return refused;
    }
    const SgEntry entry{item.source + item.sent, fragment, 0};
    ARTUNE_ASSIGN_OR_RETURN(
        bool written, out_.TryWrite(MakeRecord(RecordKind::kReadData, item.header.id, fragment),
                                    std::span<const SgEntry>(&entry, 1)));
    if (!written) return false;
    item.sent += fragment;
  }
  return true;
}

Status ShmEndpoint::FlushLocked() {
  while (!send_queue_.empty()) {
    OutItem& item = send_queue_.front();
    bool done = false;
    if (item.offer) {
      ARTUNE_ASSIGN_OR_RETURN(done, StreamLocked(item));
      if (done) --copies_in_flight_;
    } else {
      const SgEntry entry{item.payload.data(), item.payload.size(), 0};
      ARTUNE_ASSIGN_OR_RETURN(done,
                              out_.TryWrite(item.header, std::span<const SgEntry>(&entry, 1)));
    }
    PublishLocked();  // the peer may start on what is written while more is copied
    if (!done) break;
    send_queue_.pop_front();
  }
  has_queued_ = !send_queue_.empty();
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Receive buffers.

Status ShmEndpoint::PostRecv(std::byte* addr, uint64_t length, uint32_t /*lkey*/, uint64_t wr_id) {
  std::lock_guard lock(post_mutex_);
  if (post_closed_) return Status::Unavailable("connection to " + link_.peer + " is closed");
  posted_recvs_.push_back({addr, length, wr_id});
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Close and teardown.

void ShmEndpoint::Close(Status why) {
  {
    std::lock_guard lock(close_mutex_);
    if (close_reason_.ok()) close_reason_ = std::move(why);
  }
  // Both progress threads see end of stream on the socket and tear down there.
  std::lock_guard lock(send_mutex_);
  if (!send_closed_) ::shutdown(link_.socket, SHUT_RDWR);
}

void ShmEndpoint::BreakLocked(const Status& why) {
  {
    std::lock_guard lock(close_mutex_);
    if (close_reason_.ok()) close_reason_ = why;
  }
  ::shutdown(link_.socket, SHUT_RDWR);  // the progress thread tears down
}

void ShmEndpoint::Teardown(Status why) {
  if (torn_down_) return;
  torn_down_ = true;
  {
    std::lock_guard lock(close_mutex_);
    if (!close_reason_.ok()) why = close_reason_;
  }
  fabric_.Unwatch(this);
  {
    std::lock_guard lock(send_mutex_);
    send_closed_ = true;
    send_queue_.clear();
    has_queued_ = false;
    ::close(link_.socket);
  }
  std::unordered_map<uint32_t, std::shared_ptr<Offer>> offers;
  {
    std::lock_guard lock(offers_mutex_);
    offers_closed_ = true;
    offers.swap(offers_);
  }
  for (auto& [key, offer] : offers) {
    std::lock_guard lock(offer->mutex);
    offer->revoked = true;
  }
  // The peer is gone or going: its grants end here (a revoked offer's callback runs),
  // and so does the wait for its batches of table reads.
  for (auto& [id, offer] : grants_) ReleaseGrant(offer);
  grants_.clear();
  SettleWithdrawn(true);
  std::vector<PendingRead> failed;
  {
    std::lock_guard lock(post_mutex_);
    post_closed_ = true;
    for (auto& [id, read] : pending_reads_) failed.push_back(read);
    pending_reads_.clear();
    direct_reads_.clear();
    has_direct_ = false;
    posted_recvs_.clear();
  }
  for (const PendingRead& read : failed) Deliver({CompletionKind::kRead, read.wr_id, 0, why});
  Deliver({CompletionKind::kDisconnected, 0, 0, why});
  handler_ = nullptr;
  fabric_.Forget(this);
}

void ShmEndpoint::Deliver(const Completion& completion) {
  if (handler_) handler_(*this, completion);
}

// ---------------------------------------------------------------------------
// Progress.

bool ShmEndpoint::Poll() {
  bool moved = false;
  for (int budget = kRecordBudget; budget > 0 && !torn_down_; --budget) {
    Result<std::optional<RecordHeader>> next = in_.Peek();
    if (!next.ok()) {
      Teardown(next.status());
      return true;
    }
    if (!next->has_value()) break;
    moved = true;
    Status status = OnRecord(**next);
    if (!status.ok()) {
      Teardown(status);
      return true;
    }
  }
  // Reads posted by the records above (announces) go out in this same pass.
  if (!torn_down_ && RunDirectReads()) moved = true;
  if (!torn_down_ && SettleWithdrawn(false)) moved = true;
  if (!torn_down_ && has_queued_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(send_mutex_);
    if (!send_closed_) {
      const size_t before = send_queue_.size();
      Status flushed = FlushLocked();
      if (!flushed.ok()) BreakLocked(flushed);
      moved = moved || send_queue_.size() != before;
    }
  }
  return moved;
}

bool ShmEndpoint::PrepareToSleep() {
  // Before any flag is set: a ring that answers a flag set below comes after this
  // drain, so it is an edge epoll still reports (a drain after the flags could
  // swallow it and sleep on a published record).
  if (++sleeps_since_drain_ >= sleeps_per_drain_) {
    sleeps_since_drain_ = 0;
    (void)DrainDoorbell(link_.doorbell);
  }
  if (has_direct_.load(std::memory_order_relaxed)) return true;
  if (has_withdrawn_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(offers_mutex_);
    for (const Withdrawn& entry : withdrawn_) {
      if (publisher_.AskForWakeup(entry.ticket)) return true;
    }
  }
  if (has_queued_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(send_mutex_);
    if (!send_queue_.empty()) {
      Result<uint64_t> free = out_.AskForRoom();
      // Some room freed since the last try: try again rather than sleep.
      if (!free.ok() || *free >= RecordBytes(kMinFragment)) return true;
    }
  }
  return in_.Sleep();
}

void ShmEndpoint::Awake() { in_.Awake(); }

void ShmEndpoint::OnEvent() {
  char byte = 0;
  const ssize_t n = ::recv(link_.socket, &byte, 1, MSG_DONTWAIT);
  if (n > 0) {
    return Teardown(Status::ProtocolError("bytes from " + link_.peer +
                                          " on the shm control socket; dropping the connection"));
  }
  const bool closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  if (!closed && !PeerExited(link_.pidfd)) return;
  // What the peer published before it went is still delivered.
  // Bounded: a peer that closed its socket but still writes cannot hold us here.
  for (int pass = 0; pass < 1024 && !torn_down_ && Poll(); ++pass) {
  }
  Teardown(Status::Unavailable("connection to " + link_.peer + " closed by the peer"));
}

Status ShmEndpoint::OnRecord(const RecordHeader& header) {
  switch (static_cast<RecordKind>(header.kind)) {
    case RecordKind::kSend:
      return OnSend(header);
    case RecordKind::kReadRequest:
      return OnReadRequest(header);
    case RecordKind::kReadData:
      return OnReadData(header);
    case RecordKind::kReadGrant:
    case RecordKind::kReadRefused:
    case RecordKind::kReadDone:
      if (header.length != 0) {
        return Status::ProtocolError("read reply with a payload from " + link_.peer);
      }
      break;
  }
  const uint64_t id = header.id;
  const auto kind = static_cast<RecordKind>(header.kind);
  if (in_.Consume()) WakePeer();
  if (kind == RecordKind::kReadGrant) return OnReadGrant(id);
  if (kind == RecordKind::kReadRefused) return OnReadRefused(id);
  return OnReadDone(id);
}

Status ShmEndpoint::OnSend(const RecordHeader& header) {
  PostedRecv recv{};
  {
    std::lock_guard lock(post_mutex_);
    if (posted_recvs_.empty()) {
      return Status::ProtocolError("a send of " + std::to_string(header.length) + " bytes from " +
                                   link_.peer +
                                   " with no receive buffer posted (the peer ignored flow "
                                   "control); dropping the connection");
    }
    recv = posted_recvs_.front();
    posted_recvs_.pop_front();
  }
  if (header.length > recv.length) {
    return Status::ProtocolError("a send of " + std::to_string(header.length) +
                                 " bytes into a receive buffer of " + std::to_string(recv.length) +
                                 " from " + link_.peer + "; dropping the connection");
  }
  in_.CopyPayload(0, recv.addr, header.length);
  if (in_.Consume()) WakePeer();
  Deliver({CompletionKind::kRecv, recv.wr_id, header.length, Status::Ok()});
  return Status::Ok();
}

}  // namespace artune::transport::fabric::shm