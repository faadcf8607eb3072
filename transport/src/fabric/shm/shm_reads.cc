// The shm endpoint's offers and reads: Expose/Revoke on the owner's side, PostRead
// on the reader's, and the records between them (read request, grant, data,
// refusal, done). Every value from the peer is checked before use (shm_fabric.h).
#include <sys/uio.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "fabric/shm/shm_endpoint_internal.h"
#include "fabric/shm/shm_fabric.h"

namespace artune::transport::fabric::shm {
namespace {

// Grants and owner-side copies in flight per connection: beyond, the peer ignored
// the protocol above (which caps reads in flight) and is dropped.
constexpr size_t kMaxReadsServed = 8192;
// Reads taken into one process_vm_readv (IOV_MAX is 1024), and the bytes after
// which a batch takes no more: a pass that copied this much delivers what it read
// (the layer above posts the next chunks) before it copies more.
constexpr size_t kMaxBatchReads = 64;
constexpr uint64_t kMaxBatchBytes = uint64_t{1} << 20;

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
  // A published offer's key names its slot in its low bits (the rest stays random);
  // an unpublished one's names whatever slot, whose key will not match.
  const std::optional<uint32_t> slot = publisher_.TakeSlot();
  uint32_t key = 0;
  do {
    key = random_keys_.Next();
    if (slot) key = (key & ~kOfferSlotMask) | *slot;
  } while (key == 0 || offers_.contains(key));
  if (slot) publisher_.Publish(*slot, key, reinterpret_cast<uint64_t>(addr), length);
  offer->slot = slot;
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
    if (offer && offer->slot) {
      {
        std::lock_guard offer_lock(offer->mutex);
        offer->revoked = true;  // no new grant from here on
      }
      const uint32_t slot = *offer->slot;
      const std::optional<uint64_t> ticket = publisher_.Withdraw(slot);
      if (ticket) {
        // A batch of the reader's may be copying it: released when that batch is over.
        withdrawn_.push_back({std::move(offer), slot, *ticket, std::move(revoked)});
        has_withdrawn_ = true;
        if (!fabric_.InPassOnThisThread()) fabric_.Wake();  // a sleeping owner must look again
        return;
      }
    }
  }
  if (!offer) {
    if (revoked) revoked();
    return;
  }
  FinishRevoke(offer, std::move(revoked));
}

void ShmEndpoint::FinishRevoke(const std::shared_ptr<Offer>& offer, std::function<void()> revoked) {
  {
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

bool ShmEndpoint::SettleWithdrawn(bool all) {
  if (!has_withdrawn_.load(std::memory_order_relaxed)) return false;
  std::vector<Withdrawn> settled;
  {
    std::lock_guard lock(offers_mutex_);
    std::erase_if(withdrawn_, [&](Withdrawn& entry) {
      if (!all && !publisher_.Released(entry.slot, entry.ticket)) return false;
      settled.push_back(std::move(entry));
      return true;
    });
    has_withdrawn_ = !withdrawn_.empty();
  }
  for (Withdrawn& entry : settled) FinishRevoke(entry.offer, std::move(entry.revoked));
  return !settled.empty();
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
    if (one_copy_) {
      // The next pass reads it from the offer table, with the others posted by then.
      direct_reads_.push_back(id);
      has_direct_ = true;
    }
  }
  if (one_copy_) {
    if (!fabric_.InPassOnThisThread()) fabric_.Wake();
    return Status::Ok();
  }
  Status status = RequestRead(id, read, ReadMode::kCopy);
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

bool ShmEndpoint::RunDirectReads() {
  if (!has_direct_.load(std::memory_order_relaxed)) return false;
  std::vector<DirectRead> batch = TakeDirectBatch();
  if (batch.empty()) return false;
  // Reads the table covers go into one process_vm_readv; the others ask the owner.
  std::vector<DirectRead> asked;
  std::vector<DirectRead> covered;
  std::vector<iovec> local;
  std::vector<iovec> remote;
  table_reader_.BeginBatch();
  for (DirectRead& queued : batch) {
    const PendingRead& read = queued.read;
    if (!table_reader_.Offered(read.key, read.remote_addr, read.length)) {
      asked.push_back(queued);
      continue;
    }
    local.push_back({read.local, read.length});
    remote.push_back({reinterpret_cast<void*>(read.remote_addr), read.length});
    covered.push_back(queued);
  }
  ssize_t n = 0;
  int error = 0;
  if (!covered.empty()) {
    n = -1;
    error = EPERM;
    if (!simulate_refusal_) {
      n = ::process_vm_readv(link_.peer_pid, local.data(), local.size(), remote.data(),
                             remote.size(), 0);
      error = errno;
    }
    // As in OnReadGrant: a pid whose process is gone may name another one now.
    if (n >= 0 && PeerExited(link_.pidfd)) {
      n = -1;
      error = ESRCH;
    }
  }
  if (table_reader_.EndBatch()) WakePeer();
  if (n < 0 && (error == EPERM || error == EACCES || error == ENOSYS)) {
    // No ptrace rights over the peer: the owner copies from now on (this batch too).
    one_copy_ = false;
    fabric_.NoteOneCopyRefused(link_.peer, error);
    for (const DirectRead& queued : covered) {
      (void)RequestRead(queued.id, queued.read, ReadMode::kCopy);
    }
    covered.clear();
  }
  const std::vector<Completion> done = SettleDirectReads(covered, n, error);
  for (const DirectRead& queued : asked) {
    (void)RequestRead(queued.id, queued.read, ReadMode::kGrant);
  }
  for (const Completion& completion : done) Deliver(completion);
  return true;
}

std::vector<ShmEndpoint::DirectRead> ShmEndpoint::TakeDirectBatch() {
  std::vector<DirectRead> batch;
  std::lock_guard lock(post_mutex_);
  uint64_t bytes = 0;
  while (!direct_reads_.empty() && batch.size() < kMaxBatchReads && bytes < kMaxBatchBytes) {
    const uint64_t id = direct_reads_.front();
    direct_reads_.pop_front();
    auto it = pending_reads_.find(id);
    if (it == pending_reads_.end()) continue;
    batch.push_back({id, it->second});
    bytes += it->second.length;
  }
  has_direct_ = !direct_reads_.empty();
  return batch;
}

std::vector<Completion> ShmEndpoint::SettleDirectReads(const std::vector<DirectRead>& covered,
                                                       ssize_t n, int error) {
  // The kernel stops at the first iovec it cannot read whole (EFAULT when that is
  // the first): the reads before it are done, that one failed, the rest go again
  // (each pass settles at least one). Any other error fails them all.
  uint64_t left = n > 0 ? static_cast<uint64_t>(n) : 0;
  std::vector<std::pair<uint64_t, Completion>> done;
  std::vector<uint64_t> again;
  bool stopped = false;  // the kernel stopped at an earlier read of the batch
  auto fail = [&](const DirectRead& queued, const std::string& why) {
    done.push_back(
        {queued.id, {CompletionKind::kRead, queued.read.wr_id, 0, Status::Unavailable(why)}});
  };
  const std::string error_text =
      n < 0 ? Status::FromErrno("process_vm_readv from " + link_.peer, error).message() : "";
  for (const DirectRead& queued : covered) {
    const uint64_t length = queued.read.length;
    if (!stopped && n >= 0 && left >= length) {
      left -= length;
      ReadCounters().one_copy.fetch_add(1, std::memory_order_relaxed);
      ReadCounters().unasked.fetch_add(1, std::memory_order_relaxed);
      done.push_back({queued.id, {CompletionKind::kRead, queued.read.wr_id, length, Status::Ok()}});
    } else if (n < 0 && error != EFAULT) {
      fail(queued, error_text);
    } else if (!stopped) {
      stopped = true;
      fail(queued, n < 0 ? error_text : "short process_vm_readv from " + link_.peer);
    } else {
      again.push_back(queued.id);
    }
  }
  {
    std::lock_guard lock(post_mutex_);
    for (const auto& [id, completion] : done) pending_reads_.erase(id);
    direct_reads_.insert(direct_reads_.begin(), again.begin(), again.end());
    if (!direct_reads_.empty()) has_direct_ = true;
  }
  std::vector<Completion> completions;
  completions.reserve(done.size());
  for (auto& [id, completion] : done) completions.push_back(std::move(completion));
  return completions;
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