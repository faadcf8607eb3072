// The shm fabric's endpoint: records into the peer-bound ring (inline, or queued
// when it is full), the inbound ring's record handlers, offers and reads.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fabric/shm/shm_fabric.h"

namespace artune::transport::fabric::shm {
namespace {

// Inbound records handled per endpoint per pass: one busy peer cannot starve others.
constexpr int kRecordBudget = 64;
// A read copied by the owner goes out in fragments of at most this many bytes, and
// waits for at least kMinFragment of room (no dribbling of tiny records).
constexpr uint64_t kFragmentBytes = 256 * 1024;
constexpr uint64_t kMinFragment = 4096;
// Grants and owner-side copies in flight per connection: beyond, the peer ignored
// the protocol above (which caps reads in flight) and is dropped.
constexpr size_t kMaxReadsServed = 8192;

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

RecordHeader MakeRecord(RecordKind kind, uint64_t id, uint64_t length = 0) {
  RecordHeader header;
  header.kind = static_cast<uint32_t>(kind);
  header.id = id;
  header.length = length;
  return header;
}

bool PeerExited(int pidfd) {
  if (pidfd < 0) return false;
  pollfd entry{pidfd, POLLIN, 0};
  return ::poll(&entry, 1, 0) > 0;
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
}

ShmEndpoint::~ShmEndpoint() {
  if (!torn_down_ && link_.socket >= 0) ::close(link_.socket);
  for (int fd : {link_.own_wake, link_.peer_wake, link_.pidfd}) {
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
  if (!has_queued_.exchange(true)) fabric_.WakeProgress();
  return Status::Ok();
}

void ShmEndpoint::PublishLocked() {
  if (out_.Publish()) WakePeer();
}

void ShmEndpoint::WakePeer() {
  uint64_t one = 1;
  (void)!::write(link_.peer_wake, &one, sizeof(one));
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
// Offers and reads.

Status ShmEndpoint::PostRecv(std::byte* addr, uint64_t length, uint32_t /*lkey*/, uint64_t wr_id) {
  std::lock_guard lock(post_mutex_);
  if (post_closed_) return Status::Unavailable("connection to " + link_.peer + " is closed");
  posted_recvs_.push_back({addr, length, wr_id});
  return Status::Ok();
}

Result<uint32_t> ShmEndpoint::Expose(const std::byte* addr, uint64_t length, uint32_t lkey) {
  std::shared_ptr<Region> region = fabric_.FindRegion(lkey);
  if (!region || !OfferFitsRegion(addr, length, region->addr, region->length)) {
    return Status::InvalidArgument("cannot offer " + std::to_string(length) +
                                   " bytes outside a registered region");
  }
  auto offer = std::make_shared<Offer>();
  offer->addr = const_cast<std::byte*>(addr);
  offer->length = length;
  offer->region = std::move(region);
  std::lock_guard lock(offers_mutex_);
  if (offers_closed_) return Status::Unavailable("connection to " + link_.peer + " is closed");
  uint32_t key = 0;
  do {
    key = random_keys_.Next();
  } while (offers_.contains(key));
  offers_[key] = std::move(offer);
  return key;
}

void ShmEndpoint::Revoke(uint32_t key, std::function<void()> revoked) {
  std::shared_ptr<Offer> offer;
  {
    std::lock_guard lock(offers_mutex_);
    auto it = offers_.find(key);
    if (it != offers_.end()) {
      offer = std::move(it->second);
      offers_.erase(it);
    }
  }
  if (offer) {
    std::lock_guard lock(offer->mutex);
    offer->revoked = true;  // owner-side copies stop at their next fragment
    if (offer->grants > 0) {
      // A reader is copying with process_vm_readv: the memory stays until it is done.
      if (revoked) offer->when_released.push_back(std::move(revoked));
      return;
    }
  }
  if (revoked) revoked();
}

void ShmEndpoint::ReleaseGrant(const std::shared_ptr<Offer>& offer) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(offer->mutex);
    if (--offer->grants == 0 && offer->revoked) callbacks.swap(offer->when_released);
  }
  for (auto& callback : callbacks) callback();
}

Status ShmEndpoint::PostRead(const RemoteRegion& remote, std::byte* local, uint32_t /*lkey*/,
                             uint64_t wr_id) {
  PendingRead read{local, remote.addr, remote.length, remote.rkey, wr_id, 0};
  uint64_t id = 0;
  {
    std::lock_guard lock(post_mutex_);
    if (post_closed_) return Status::Unavailable("connection to " + link_.peer + " is closed");
    id = next_read_id_++;
    pending_reads_[id] = read;
  }
  Status status = RequestRead(id, read, one_copy_ ? ReadMode::kGrant : ReadMode::kCopy);
  if (!status.ok()) {
    std::lock_guard lock(post_mutex_);
    pending_reads_.erase(id);
  }
  return status;
}

Status ShmEndpoint::RequestRead(uint64_t id, const PendingRead& read, ReadMode mode) {
  ReadRequestBody body;
  body.addr = read.remote_addr;
  body.length = read.length;
  body.key = read.key;
  body.mode = static_cast<uint32_t>(mode);
  const SgEntry entry{reinterpret_cast<const std::byte*>(&body), sizeof(body), 0};
  return SendRecord(MakeRecord(RecordKind::kReadRequest, id, sizeof(body)),
                    std::span<const SgEntry>(&entry, 1));
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
  // The peer is gone or going: its grants end here (a revoked offer's callback runs).
  for (auto& [id, offer] : grants_) ReleaseGrant(offer);
  grants_.clear();
  std::vector<PendingRead> failed;
  {
    std::lock_guard lock(post_mutex_);
    post_closed_ = true;
    for (auto& [id, read] : pending_reads_) failed.push_back(read);
    pending_reads_.clear();
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

Status ShmEndpoint::OnReadRequest(const RecordHeader& header) {
  ReadRequestBody request;
  if (header.length != sizeof(request)) {
    return Status::ProtocolError("read request of " + std::to_string(header.length) +
                                 " bytes from " + link_.peer);
  }
  in_.CopyPayload(0, reinterpret_cast<std::byte*>(&request), sizeof(request));
  if (in_.Consume()) WakePeer();
  const auto mode = static_cast<ReadMode>(request.mode);
  if (mode != ReadMode::kGrant && mode != ReadMode::kCopy) {
    return Status::ProtocolError("read request mode " + std::to_string(request.mode));
  }
  if (grants_.size() + copies_in_flight_ >= kMaxReadsServed || grants_.contains(header.id)) {
    return Status::ProtocolError("reads in flight beyond the protocol's limits from " + link_.peer +
                                 "; dropping the connection");
  }
  // Only this endpoint's own offers are looked at: a key offered on another
  // connection, a revoked one and a range outside the offer are all one refusal.
  std::shared_ptr<Offer> offer;
  {
    std::lock_guard lock(offers_mutex_);
    auto it = offers_.find(request.key);
    if (it != offers_.end()) offer = it->second;
  }
  const uint64_t start = offer ? reinterpret_cast<uint64_t>(offer->addr) : 0;
  bool inside = offer && request.length > 0 && request.addr >= start &&
                request.length <= offer->length &&
                request.addr - start <= offer->length - request.length;
  if (inside && mode == ReadMode::kGrant) {
    std::lock_guard lock(offer->mutex);
    std::lock_guard region_lock(offer->region->mutex);
    inside = !offer->revoked && !offer->region->deregistered;
    if (inside) ++offer->grants;
  }
  if (!inside) return SendRecord(MakeRecord(RecordKind::kReadRefused, header.id), {});
  if (mode == ReadMode::kGrant) {
    grants_[header.id] = offer;
    return SendRecord(MakeRecord(RecordKind::kReadGrant, header.id), {});
  }
  ReadCounters().owner_copy.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(send_mutex_);
  if (send_closed_) return Status::Ok();
  OutItem item;
  item.header = MakeRecord(RecordKind::kReadData, header.id, request.length);
  item.offer = std::move(offer);
  item.source = reinterpret_cast<const std::byte*>(request.addr);
  send_queue_.push_back(std::move(item));
  ++copies_in_flight_;
  has_queued_ = true;
  return FlushLocked();
}

Status ShmEndpoint::OnReadGrant(uint64_t id) {
  PendingRead read;
  {
    std::lock_guard lock(post_mutex_);
    auto it = pending_reads_.find(id);
    if (it == pending_reads_.end()) {
      return Status::ProtocolError("read grant for unknown request " + std::to_string(id) +
                                   " from " + link_.peer);
    }
    read = it->second;
  }
  iovec local{read.local, read.length};
  iovec remote{reinterpret_cast<void*>(read.remote_addr), read.length};
  ssize_t n = -1;
  int error = EPERM;
  if (!simulate_refusal_) {
    n = ::process_vm_readv(link_.peer_pid, &local, 1, &remote, 1, 0);
    error = errno;
  }
  // The pid named the peer when the connection was made; if the peer is gone its
  // pid may name another process now: nothing read then counts.
  if (n >= 0 && PeerExited(link_.pidfd)) {
    n = -1;
    error = ESRCH;
  }
  ARTUNE_RETURN_IF_ERROR(SendRecord(MakeRecord(RecordKind::kReadDone, id), {}));
  if (n < 0 && (error == EPERM || error == EACCES || error == ENOSYS)) {
    // No ptrace rights over the peer: this endpoint asks the owner to copy from now on.
    one_copy_ = false;
    fabric_.NoteOneCopyRefused(link_.peer, error);
    return RequestRead(id, read, ReadMode::kCopy);
  }
  {
    std::lock_guard lock(post_mutex_);
    pending_reads_.erase(id);
  }
  if (n != static_cast<ssize_t>(read.length)) {
    Deliver({CompletionKind::kRead, read.wr_id, 0,
             Status::Unavailable(
                 n < 0 ? Status::FromErrno("process_vm_readv from " + link_.peer, error).message()
                       : "short process_vm_readv from " + link_.peer)});
    return Status::Ok();
  }
  ReadCounters().one_copy.fetch_add(1, std::memory_order_relaxed);
  Deliver({CompletionKind::kRead, read.wr_id, read.length, Status::Ok()});
  return Status::Ok();
}

Status ShmEndpoint::OnReadData(const RecordHeader& header) {
  PendingRead read;
  {
    std::lock_guard lock(post_mutex_);
    auto it = pending_reads_.find(header.id);
    if (it == pending_reads_.end() || header.length == 0 ||
        header.length > it->second.length - it->second.received) {
      return Status::ProtocolError("read data of " + std::to_string(header.length) +
                                   " bytes for request " + std::to_string(header.id) +
                                   " beyond what was asked, from " + link_.peer);
    }
    in_.CopyPayload(0, it->second.local + it->second.received, header.length);
    it->second.received += header.length;
    read = it->second;
    if (read.received == read.length) pending_reads_.erase(it);
  }
  if (in_.Consume()) WakePeer();
  if (read.received == read.length) {
    Deliver({CompletionKind::kRead, read.wr_id, read.length, Status::Ok()});
  }
  return Status::Ok();
}

Status ShmEndpoint::OnReadRefused(uint64_t id) {
  PendingRead read;
  {
    std::lock_guard lock(post_mutex_);
    auto it = pending_reads_.find(id);
    if (it == pending_reads_.end()) {
      return Status::ProtocolError("read refusal for unknown request " + std::to_string(id) +
                                   " from " + link_.peer);
    }
    read = it->second;
    pending_reads_.erase(it);
  }
  Deliver({CompletionKind::kRead, read.wr_id, 0,
           Status::ProtocolError("read from " + link_.peer +
                                 " refused: not offered on this connection")});
  return Status::Ok();
}

Status ShmEndpoint::OnReadDone(uint64_t id) {
  auto it = grants_.find(id);
  if (it == grants_.end()) {
    return Status::ProtocolError("read done for no grant (" + std::to_string(id) + ") from " +
                                 link_.peer);
  }
  std::shared_ptr<Offer> offer = std::move(it->second);
  grants_.erase(it);
  ReleaseGrant(offer);
  return Status::Ok();
}

}  // namespace artune::transport::fabric::shm
