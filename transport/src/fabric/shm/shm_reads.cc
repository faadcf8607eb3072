// The shm endpoint's offers and reads: Expose/Revoke on the owner's side, PostRead
// on the reader's, and the records between them (read request, grant, data,
// refusal, done). Every value from the peer is checked before use (shm_fabric.h).
#include <sys/uio.h>

#include <cerrno>

#include "fabric/shm/shm_endpoint_internal.h"
#include "fabric/shm/shm_fabric.h"

namespace artune::transport::fabric::shm {
namespace {

// Grants and owner-side copies in flight per connection: beyond, the peer ignored
// the protocol above (which caps reads in flight) and is dropped.
constexpr size_t kMaxReadsServed = 8192;

}  // namespace

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