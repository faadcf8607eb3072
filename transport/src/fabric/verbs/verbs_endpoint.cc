// The verbs fabric's endpoint: one RC queue pair, its CQ, the send ring, posting
// (inline, ring copy, queued), completion handling and failure (verbs_fabric.h).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabric/verbs/verbs_fabric.h"
#include "fabric/verbs/verbs_util.h"

namespace artune::transport::fabric::verbs {
namespace {

constexpr uint64_t kSendRingBytes = 4 * 1024 * 1024;
constexpr uint32_t kSendQueueDepth = 512;
// Receive buffers the protocol layer posts at most (eager_buffer_count + 1 spare).
constexpr uint32_t kRecvQueueDepth = 4096 + 8;
constexpr uint64_t kValueMask = (uint64_t{1} << 61) - 1;
constexpr int kPollBatch = 32;
// Selective signalling: an inline send is signalled every this many, and whenever
// no more than this many send-queue slots are free (so a full queue always has a
// signalled request in flight whose completion frees it).
constexpr uint32_t kSignalEvery = 16;

}  // namespace

std::string WcStatusText(ibv_wc_status status) {
  static constexpr const char* kNames[] = {"IBV_WC_SUCCESS",           "IBV_WC_LOC_LEN_ERR",
                                           "IBV_WC_LOC_QP_OP_ERR",     "IBV_WC_LOC_EEC_OP_ERR",
                                           "IBV_WC_LOC_PROT_ERR",      "IBV_WC_WR_FLUSH_ERR",
                                           "IBV_WC_MW_BIND_ERR",       "IBV_WC_BAD_RESP_ERR",
                                           "IBV_WC_LOC_ACCESS_ERR",    "IBV_WC_REM_INV_REQ_ERR",
                                           "IBV_WC_REM_ACCESS_ERR",    "IBV_WC_REM_OP_ERR",
                                           "IBV_WC_RETRY_EXC_ERR",     "IBV_WC_RNR_RETRY_EXC_ERR",
                                           "IBV_WC_LOC_RDD_VIOL_ERR",  "IBV_WC_REM_INV_RD_REQ_ERR",
                                           "IBV_WC_REM_ABORT_ERR",     "IBV_WC_INV_EECN_ERR",
                                           "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
                                           "IBV_WC_RESP_TIMEOUT_ERR",  "IBV_WC_GENERAL_ERR"};
  const auto index = static_cast<size_t>(status);
  std::string name = index < std::size(kNames) ? kNames[index] : "status " + std::to_string(index);
  return name + " (" + ibv_wc_status_str(status) + ")";
}

VerbsEndpoint::VerbsEndpoint(VerbsFabric& fabric, rdma_cm_id* id, std::string peer)
    : fabric_(fabric), id_(id), peer_(std::move(peer)) {}

VerbsEndpoint::~VerbsEndpoint() { Release(); }

std::string VerbsEndpoint::VerbError(std::string_view verb, int rc) const {
  return std::string(verb) + " on the verbs connection to " + peer_ +
         " failed: " + std::strerror(rc);
}

Status VerbsEndpoint::CreateQueues() {
  const Config& config = fabric_.config();
  send_queue_depth_ = std::min(kSendQueueDepth, fabric_.max_qp_wr());
  const uint32_t recv_depth = std::min(kRecvQueueDepth, fabric_.max_qp_wr());
  cq_ = ibv_create_cq(id_->verbs, static_cast<int>(send_queue_depth_ + recv_depth), this,
                      fabric_.comp_channel(), 0);
  if (cq_ == nullptr) return Status::ResourceExhausted(VerbError("ibv_create_cq", errno));
  if (fabric_.polling() != PollingMode::kBusy && ibv_req_notify_cq(cq_, 0) != 0) {
    return Status::Unavailable(VerbError("ibv_req_notify_cq", errno));
  }
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_;
  attr.recv_cq = cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;  // selective signalling (verbs_fabric.h)
  attr.cap.max_send_wr = send_queue_depth_;
  attr.cap.max_recv_wr = recv_depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = config.verbs_inline_size;
  qp_ = ibv_create_qp(fabric_.pd(), &attr);
  // A device that grants less inline data than asked refuses the QP: halve the
  // request until it is granted (or none is).
  while (qp_ == nullptr && attr.cap.max_inline_data > 0) {
    attr.cap.max_inline_data = attr.cap.max_inline_data >= 64 ? attr.cap.max_inline_data / 2 : 0;
    qp_ = ibv_create_qp(fabric_.pd(), &attr);
  }
  if (qp_ == nullptr) return Status::ResourceExhausted(VerbError("ibv_create_qp", errno));
  inline_limit_ = std::min(attr.cap.max_inline_data, config.verbs_inline_size);
  send_slots_ = send_queue_depth_;
  ring_.resize(kSendRingBytes);
  ring_mr_ = ibv_reg_mr(fabric_.pd(), ring_.data(), ring_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (ring_mr_ == nullptr) {
    return Status::ResourceExhausted(VerbError("ibv_reg_mr (send ring)", errno));
  }
  return Status::Ok();
}

Status VerbsEndpoint::ModifyQp(ibv_qp_state state) {
  const Config& config = fabric_.config();
  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = state;
  if (int rc = rdma_init_qp_attr(id_, &attr, &mask); rc != 0) {
    return Status::Unavailable(VerbError("rdma_init_qp_attr", errno));
  }
  if (state == IBV_QPS_INIT) attr.qp_access_flags |= IBV_ACCESS_REMOTE_READ;
  if (state == IBV_QPS_RTR) {
    if (config.verbs_mtu != 0) {
      attr.path_mtu = std::min(attr.path_mtu, MtuFromBytes(config.verbs_mtu));
    }
    if (config.verbs_gid_index != kVerbsGidAuto) {
      attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(config.verbs_gid_index);
    }
    attr.min_rnr_timer = 12;  // 0.64 ms: the credit rule keeps RNR rare
  }
  if (state == IBV_QPS_RTS) {
    attr.timeout = static_cast<uint8_t>(config.verbs_qp_timeout);
    attr.retry_cnt = static_cast<uint8_t>(config.verbs_retry_count);
    attr.rnr_retry = 6;  // bounded: a peer that never re-posts fails the send
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
  }
  std::lock_guard lock(mutex_);
  if (int rc = ibv_modify_qp(qp_, &attr, mask); rc != 0) {
    static constexpr const char* kStates[] = {"RESET", "INIT", "RTR", "RTS"};
    const auto index = static_cast<size_t>(state);
    return Status::Unavailable(
        VerbError(std::string("ibv_modify_qp(to ") + (index < 4 ? kStates[index] : "?") + ")", rc));
  }
  return Status::Ok();
}

void VerbsEndpoint::Start(CompletionHandler handler) {
  {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
  }
  fabric_.Wake();  // completions that arrived before Start are waiting in the CQ
}

// ---------------------------------------------------------------------------
// Posting.

Status VerbsEndpoint::PostSend(std::span<const SgEntry> sgl) {
  uint64_t total = 0;
  for (const SgEntry& entry : sgl) total += entry.length;
  if (total > kSendRingBytes) {
    return Status::InvalidArgument("a verbs send of " + std::to_string(total) +
                                   " bytes exceeds the send ring of " +
                                   std::to_string(kSendRingBytes));
  }
  std::lock_guard lock(mutex_);
  if (failed_ || released_) return Status::Unavailable(failure_.message());
  if (queued_.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(bool posted, TryPostSendLocked(sgl, total));
    if (posted) return Status::Ok();
  }
  QueuedSend copy;
  copy.bytes.resize(total);
  std::byte* out = copy.bytes.data();
  for (const SgEntry& entry : sgl) {
    if (entry.length > 0) std::memcpy(out, entry.addr, entry.length);
    out += entry.length;
  }
  queued_.emplace_back(std::move(copy));
  return Status::Ok();
}

void VerbsEndpoint::NoteSendPostedLocked(uint64_t seq, bool signalled) {
  posted_.push_back({seq, ring_head_});
  --send_slots_;
  if (signalled) {
    ++outstanding_;
    unsignalled_run_ = 0;
  } else {
    ++unsignalled_run_;
  }
}

void VerbsEndpoint::RetireSendsLocked(uint64_t seq) {
  while (!posted_.empty() && posted_.front().seq <= seq) {
    ring_tail_ = std::max(ring_tail_, posted_.front().ring_end);
    ++send_slots_;
    posted_.pop_front();
  }
}

Result<bool> VerbsEndpoint::TryPostSendLocked(std::span<const SgEntry> sgl, uint64_t total) {
  if (send_slots_ == 0) return false;
  ibv_sge sge{};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = total > 0 ? 1 : 0;
  std::byte inline_copy[1024];  // verbs_inline_size is at most 1024 (knob range)
  std::byte* data = nullptr;
  uint64_t ring_end = ring_head_;
  // Unsignalled only inline (it holds no ring bytes), and never the kSignalEvery-th
  // in a row or when the queue runs low: see "signalling" in verbs_fabric.h.
  bool signalled = true;
  if (total <= inline_limit_ && total <= sizeof(inline_copy)) {
    data = inline_copy;
    wr.send_flags = IBV_SEND_INLINE;
    signalled = unsignalled_run_ + 1 >= kSignalEvery || send_slots_ <= kSignalEvery;
  } else {
    // An empty ring starts over at its beginning, so that any message up to its
    // size fits (a large one would otherwise wait for room that never comes).
    if (ring_head_ == ring_tail_ && ring_head_ % kSendRingBytes != 0) {
      ring_head_ = ring_tail_ = ring_head_ + (kSendRingBytes - ring_head_ % kSendRingBytes);
    }
    // Contiguous room in the ring: skip the tail end when the message does not fit.
    const uint64_t offset = ring_head_ % kSendRingBytes;
    const uint64_t skip = kSendRingBytes - offset < total ? kSendRingBytes - offset : 0;
    if (ring_head_ + skip + total - ring_tail_ > kSendRingBytes) return false;
    data = ring_.data() + (offset + skip) % kSendRingBytes;
    ring_end = ring_head_ + skip + total;
    sge.lkey = ring_mr_->lkey;
  }
  std::byte* out = data;
  for (const SgEntry& entry : sgl) {
    if (entry.length > 0) std::memcpy(out, entry.addr, entry.length);
    out += entry.length;
  }
  sge.addr = reinterpret_cast<uint64_t>(data);
  sge.length = static_cast<uint32_t>(total);
  const uint64_t seq = next_seq_++ & kValueMask;
  wr.wr_id = MakeWrId(WrKind::kSend, seq, signalled);
  if (signalled) wr.send_flags |= IBV_SEND_SIGNALED;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    Status error = Status::Unavailable(VerbError("ibv_post_send(IBV_WR_SEND)", rc));
    FailLocked(error);
    return error;
  }
  ring_head_ = ring_end;
  NoteSendPostedLocked(seq, signalled);
  return true;
}

Status VerbsEndpoint::PostRecv(std::byte* addr, uint64_t length, uint32_t lkey, uint64_t wr_id) {
  if (wr_id > kValueMask || length > UINT32_MAX) {
    return Status::InvalidArgument("verbs receive: wr_id or length out of range");
  }
  std::lock_guard lock(mutex_);
  if (failed_ || released_) return Status::Unavailable(failure_.message());
  ibv_sge sge{reinterpret_cast<uint64_t>(addr), static_cast<uint32_t>(length), lkey};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = MakeWrId(WrKind::kRecv, wr_id, /*signalled=*/false);  // counted by kind
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) {
    Status error = Status::Unavailable(VerbError("ibv_post_recv", rc));
    FailLocked(error);
    return error;
  }
  ++outstanding_;
  return Status::Ok();
}

Result<uint32_t> VerbsEndpoint::Expose(const std::byte* addr, uint64_t length, uint32_t lkey) {
  ibv_mr* mr = fabric_.FindRegion(lkey);
  if (mr == nullptr || !OfferFitsRegion(addr, length, mr->addr, mr->length)) {
    return Status::InvalidArgument("cannot offer " + std::to_string(length) +
                                   " bytes outside a registered region");
  }
  if (!fabric_.uses_windows()) return mr->rkey;  // the documented limit (header)
  std::lock_guard lock(mutex_);
  if (failed_ || released_) return Status::Unavailable(failure_.message());
  // A window per offer: Revoke deallocates it, which invalidates it synchronously.
  ibv_mw* window = ibv_alloc_mw(fabric_.pd(), IBV_MW_TYPE_2);
  if (window == nullptr) {
    return Status::ResourceExhausted(VerbError("ibv_alloc_mw(type 2)", errno));
  }
  // A new random tag in the rkey's low byte, never the one it had.
  uint32_t rkey = window->rkey;
  do {
    rkey = (window->rkey & ~uint32_t{0xff}) | (random_tags_.Next() & 0xff);
  } while (rkey == window->rkey || offered_windows_.contains(rkey));
  offered_windows_[rkey] = window;
  Status posted = PostOrQueueLocked(
      QueuedWindowOp{window, rkey, mr, reinterpret_cast<uintptr_t>(addr), length});
  if (!posted.ok()) return posted;
  return rkey;
}

void VerbsEndpoint::Revoke(uint32_t key, std::function<void()> revoked) {
  ibv_mw* window = nullptr;
  if (fabric_.uses_windows()) {
    std::lock_guard lock(mutex_);
    auto it = offered_windows_.find(key);
    if (it != offered_windows_.end()) {
      window = it->second;
      offered_windows_.erase(it);
      // A bind still waiting for a send slot must not be posted for a dead window.
      std::erase_if(queued_, [window](const Queued& queued) {
        const auto* op = std::get_if<QueuedWindowOp>(&queued);
        return op != nullptr && op->window == window;
      });
    }
  }
  // Deallocating a window invalidates it at once, in the kernel: no read of it can
  // succeed after this returns. (A posted IBV_WR_LOCAL_INV would do the same
  // asynchronously, but Soft-RoCE on 6.1 never completed one in the lab.)
  if (window != nullptr) ibv_dealloc_mw(window);
  if (revoked) revoked();
}

Status VerbsEndpoint::PostOrQueueLocked(Queued op) {
  if (queued_.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(bool posted, TryPostWindowOpLocked(std::get<QueuedWindowOp>(op)));
    if (posted) return Status::Ok();
  }
  queued_.push_back(std::move(op));
  return Status::Ok();
}

Result<bool> VerbsEndpoint::TryPostWindowOpLocked(const QueuedWindowOp& op) {
  if (send_slots_ == 0) return false;
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  const uint64_t seq = next_seq_++ & kValueMask;
  wr.wr_id = MakeWrId(WrKind::kWindow, seq);
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.opcode = IBV_WR_BIND_MW;
  wr.bind_mw.mw = op.window;
  wr.bind_mw.rkey = op.rkey;
  wr.bind_mw.bind_info.mr = op.mr;
  wr.bind_mw.bind_info.addr = op.addr;
  wr.bind_mw.bind_info.length = op.length;
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    Status error = Status::Unavailable(VerbError("ibv_post_send(IBV_WR_BIND_MW)", rc));
    FailLocked(error);
    return error;
  }
  // Type 2: the consumer keeps a window's current key, and providers find the
  // window by it when the bind is posted, so it changes only now.
  op.window->rkey = op.rkey;
  NoteSendPostedLocked(seq, /*signalled=*/true);
  return true;
}

Status VerbsEndpoint::PostRead(const RemoteRegion& remote, std::byte* local, uint32_t lkey,
                               uint64_t wr_id) {
  if (remote.length > UINT32_MAX) {
    return Status::InvalidArgument("a verbs read of " + std::to_string(remote.length) +
                                   " bytes exceeds one work request (4 GiB - 1)");
  }
  std::lock_guard lock(mutex_);
  if (failed_ || released_) return Status::Unavailable(failure_.message());
  QueuedRead read{remote, local, lkey, wr_id};
  if (queued_.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(bool posted, TryPostReadLocked(read));
    if (posted) return Status::Ok();
  }
  queued_.emplace_back(read);
  return Status::Ok();
}

Result<bool> VerbsEndpoint::TryPostReadLocked(const QueuedRead& read) {
  if (send_slots_ == 0) return false;
  const uint64_t id = next_seq_++ & kValueMask;
  ibv_sge sge{reinterpret_cast<uint64_t>(read.local), static_cast<uint32_t>(read.remote.length),
              read.lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = MakeWrId(WrKind::kRead, id);
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = read.remote.addr;
  wr.wr.rdma.rkey = read.remote.rkey;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    Status error = Status::Unavailable(VerbError("ibv_post_send(IBV_WR_RDMA_READ)", rc));
    FailLocked(error);
    return error;
  }
  reads_[id] = read.wr_id;
  NoteSendPostedLocked(id, /*signalled=*/true);
  return true;
}

Status VerbsEndpoint::DrainQueueLocked() {
  while (!queued_.empty() && !failed_) {
    Queued& next = queued_.front();
    bool posted = false;
    if (auto* send = std::get_if<QueuedSend>(&next)) {
      SgEntry entry{send->bytes.data(), send->bytes.size(), 0};
      ARTUNE_ASSIGN_OR_RETURN(posted, TryPostSendLocked(std::span(&entry, 1), entry.length));
    } else if (auto* op = std::get_if<QueuedWindowOp>(&next)) {
      ARTUNE_ASSIGN_OR_RETURN(posted, TryPostWindowOpLocked(*op));
    } else {
      ARTUNE_ASSIGN_OR_RETURN(posted, TryPostReadLocked(std::get<QueuedRead>(next)));
    }
    if (!posted) break;
    queued_.pop_front();
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Failure and completions.

void VerbsEndpoint::Close(Status why) { Fail(std::move(why)); }

void VerbsEndpoint::Fail(Status why) {
  {
    std::lock_guard lock(mutex_);
    FailLocked(std::move(why));
  }
  fabric_.Wake();
}

void VerbsEndpoint::FailLost(Status why) {
  {
    std::lock_guard lock(mutex_);
    if (!failed_) {
      FailLocked(std::move(why));
      failure_is_lost_ = true;
    }
  }
  fabric_.Wake();
}

void VerbsEndpoint::FailLocked(Status why) {
  if (failed_) return;
  failed_ = true;
  failure_ = why.ok() ? Status::Unavailable("verbs connection to " + peer_ + " closed") : why;
  if (qp_ != nullptr && !released_) {
    // The error state flushes every posted work request: each completes, so the
    // progress thread can account for all of them before kDisconnected.
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
  }
}

VerbsEndpoint::PassResult VerbsEndpoint::Progress(bool arm) {
  PassResult result;
  if (disconnected_) return result;
  std::vector<Completion> deliveries;
  CompletionHandler handler;
  bool finished = false;
  {
    std::lock_guard lock(mutex_);
    if (cq_ == nullptr || released_) return result;
    // Before Start nothing may be delivered: leave the completions in the CQ (a
    // failure still finishes, with or without a handler).
    if (!handler_ && !failed_) return result;
    // Re-arm before polling: a completion that lands after the poll still raises
    // an event.
    if (arm) ibv_req_notify_cq(cq_, 0);
    ibv_wc wcs[kPollBatch];
    int n = 0;
    while ((n = ibv_poll_cq(cq_, kPollBatch, wcs)) > 0) {
      result.progressed = true;
      for (int i = 0; i < n; ++i) OnWorkCompletionLocked(wcs[i], deliveries);
    }
    if (n < 0)
      FailLocked(Status::Unavailable("ibv_poll_cq on the connection to " + peer_ + " failed"));
    if (!failed_) {
      Status drained = DrainQueueLocked();
      (void)drained;  // a post failure failed the endpoint (FailLocked)
    }
    if (failed_ && outstanding_ == 0) {
      FinishLocked(deliveries);
      finished = true;
    }
    // Copied only when there is something to deliver: the copy allocates (the
    // handler holds a weak_ptr), and most busy passes find nothing.
    if (!deliveries.empty()) handler = handler_;
  }
  for (const Completion& completion : deliveries) {
    if (handler) handler(*this, completion);
  }
  if (finished) {
    disconnected_ = true;
    std::lock_guard lock(mutex_);
    handler_ = nullptr;
  }
  result.finished = finished;
  return result;
}

void VerbsEndpoint::OnWorkCompletionLocked(const ibv_wc& wc, std::vector<Completion>& deliveries) {
  const auto kind = static_cast<WrKind>(wc.wr_id >> 62);
  const uint64_t value = wc.wr_id & kValueMask;
  // An unsignalled send completes only with an error (flushed or failed):
  // it was never counted.
  if (kind == WrKind::kRecv || (wc.wr_id & kSignalledBit) != 0) --outstanding_;
  const char* verb = kind == WrKind::kRead   ? "RDMA READ"
                     : kind == WrKind::kSend ? "SEND"
                     : kind == WrKind::kRecv ? "RECV"
                                             : "memory window bind/invalidate";
  if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
    Status error = Status::Unavailable(
        std::string(verb) + " completion failed: " + WcStatusText(wc.status) + ", vendor error " +
        std::to_string(wc.vendor_err) + ", QP " + std::to_string(qp_->qp_num) + " to " + peer_);
    if (failed_ && failure_is_lost_) {
      failure_ = std::move(error);  // the cause, not its consequence
      failure_is_lost_ = false;
    } else {
      FailLocked(std::move(error));
    }
  } else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
    FailLocked(Status::Unavailable("verbs QP to " + peer_ + " entered the error state"));
  }
  switch (kind) {
    case WrKind::kRecv:
      if (wc.status == IBV_WC_SUCCESS) {
        deliveries.push_back({CompletionKind::kRecv, value, wc.byte_len, Status::Ok()});
      }
      break;
    case WrKind::kRead: {
      RetireSendsLocked(value);
      auto it = reads_.find(value);
      if (it == reads_.end()) break;
      deliveries.push_back({CompletionKind::kRead, it->second, 0,
                            wc.status == IBV_WC_SUCCESS ? Status::Ok() : failure_});
      reads_.erase(it);
      break;
    }
    case WrKind::kSend:
    case WrKind::kWindow:
      RetireSendsLocked(value);
      break;
  }
}

void VerbsEndpoint::FinishLocked(std::vector<Completion>& deliveries) {
  // Reads that never reached the send queue fail with the same reason.
  for (Queued& queued : queued_) {
    if (auto* read = std::get_if<QueuedRead>(&queued)) {
      deliveries.push_back({CompletionKind::kRead, read->wr_id, 0, failure_});
    }
  }
  queued_.clear();
  deliveries.push_back({CompletionKind::kDisconnected, 0, 0, failure_});
}

void VerbsEndpoint::Release() {
  std::lock_guard lock(mutex_);
  if (released_) return;
  released_ = true;
  if (!failed_) {
    failed_ = true;
    failure_ = Status::Unavailable("verbs connection to " + peer_ + " released");
  }
  if (id_ != nullptr) rdma_disconnect(id_);
  // Windows first: a bound type-2 window holds its QP, and rxe's QP destruction
  // waits (tens of seconds) for such references to go.
  for (auto& [key, window] : offered_windows_) ibv_dealloc_mw(window);
  offered_windows_.clear();
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (ring_mr_ != nullptr) ibv_dereg_mr(ring_mr_);
  if (id_ != nullptr) rdma_destroy_id(id_);
  qp_ = nullptr;
  cq_ = nullptr;
  ring_mr_ = nullptr;
  id_ = nullptr;
}

}  // namespace artune::transport::fabric::verbs
