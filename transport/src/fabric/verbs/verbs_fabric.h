// The verbs fabric: the fabric interface (fabric.h) over rdma-core.
//
//   device       one device per fabric, opened at Init (knob verbs_device, auto: the
//                first device with an ACTIVE port); one protection domain; every
//                Register is an ibv_reg_mr there.
//   offers       where the device has type-2 memory windows (device_cap_flags
//                MEM_WINDOW_TYPE_2A/2B; rxe has them), regions are registered
//                without remote access and each Expose binds a window over exactly
//                the offered range to the endpoint's QP (IBV_WR_BIND_MW, posted on
//                the send queue ahead of the announce that names it); Revoke
//                deallocates the window, which invalidates it before it returns
//                (rxe on 6.1 never completed a posted IBV_WR_LOCAL_INV in the lab).
//                A peer can then read only that range, only on that
//                QP, only until the revoke: the HCA refuses everything else with a
//                remote access error (which breaks the offending QP). The low 8 bits
//                of a window's rkey are random per bind. On a device without type-2
//                windows, regions carry remote read and Expose hands out the region's
//                own rkey: the range check and the revoke are then the protocol
//                layer's promise only; the hardware lets any QP of this protection
//                domain that knows an rkey read its whole region. transport.h and
//                README say so; `artune devices` shows which a device has.
//   connections  librdmacm (rdma_cm) resolves the peer's IP address to a device,
//                port, GID and path and runs the CM handshake that carries the
//                private data (ConnectParams, 40 bytes; RC allows 56). The queue
//                pairs are our own (ibv_create_qp) and moved INIT -> RTR -> RTS by
//                us from rdma_init_qp_attr, so the knobs apply: verbs_mtu caps the
//                path MTU, verbs_gid_index overrides the source GID, verbs_qp_timeout
//                and verbs_retry_count set the ACK timeout and retransmissions.
//                Why rdma_cm and not the gRPC control plane: the fabric interface is
//                connect/accept with private data, which rdma_cm is; it resolves
//                GIDs and paths for IB and RoCE alike; and when a peer process dies
//                its kernel sends a DREQ, so the survivor learns at once
//                (RDMA_CM_EVENT_DISCONNECTED) instead of at its next retry timeout.
//   endpoints    one RC QP and one CQ each (CQ sized to the QP: it cannot overflow).
//                Sends up to verbs_inline_size go inline; larger ones are copied into
//                the endpoint's registered send ring (PostSend's contract lets the
//                caller reuse its memory on return). Sends and reads that find the
//                send queue or the ring full wait in order in a software queue that
//                send completions drain. Reads are IBV_WR_RDMA_READ into the
//                caller's registered memory.
//   signalling   selective (sq_sig_all off): reads, window binds and ring sends are
//                signalled; inline sends only every kSignalEvery-th, or when few
//                send-queue slots are left. RC completes a send queue in order, so
//                one completion retires every work request posted before it; the
//                unsignalled ones hold nothing but their slot (their bytes went
//                inline), so a queue stall can only wait on a signalled request.
//                In the error state every request completes (flushed), signalled or
//                not. A small call thus costs two completions, not four, and in
//                event mode no wake-up for its send.
//   progress     one thread per fabric: busy mode polls every CQ in a loop; event mode
//                sleeps on the completion channel (and a wake-up eventfd); adaptive
//                spins for poll_spin_us after the last completion, then sleeps as
//                event. A caller waiting for its own call in busy or adaptive
//                polling runs the passes itself (fabric.h: caller-driven progress)
//                while the thread parks. A pass (thread's or caller's) holds
//                progress_mutex_; completions are delivered in it. A second thread
//                reads rdma_cm events (accepts, disconnects).
//   failure      the first error completion (any status but a flush), a QP error, a
//                DISCONNECTED event or Close moves the QP to the error state; every
//                posted work request then completes (flushed), reads fail with the
//                first error ("RDMA READ completion failed: IBV_WC_REMOTE_ACCESS_ERR
//                ..."), kDisconnected follows once nothing is outstanding, and the QP,
//                CQ and cm_id are destroyed on the progress thread.
//
// Threading: as fabric.h. The AcceptHandler runs on the rdma_cm thread (before the
// connection is accepted, so its receive buffers are posted before the peer sends).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "fabric/fabric.h"
#include "fabric/progress_fabric.h"
#include "fabric/random_keys.h"

namespace artune::transport::fabric::verbs {

class VerbsFabric;

class VerbsEndpoint final : public Endpoint, public std::enable_shared_from_this<VerbsEndpoint> {
 public:
  VerbsEndpoint(VerbsFabric& fabric, rdma_cm_id* id, std::string peer);
  ~VerbsEndpoint() override;

  // Connection setup (the fabric's connect/accept paths, before the endpoint is used).
  Status CreateQueues();
  Status ModifyQp(ibv_qp_state state);  // from rdma_init_qp_attr plus the knobs
  uint32_t qp_num() const { return qp_->qp_num; }
  rdma_cm_id* cm_id() const { return id_; }

  void Start(CompletionHandler handler) override;
  Status PostSend(std::span<const SgEntry> sgl) override;
  Status PostRecv(std::byte* addr, uint64_t length, uint32_t lkey, uint64_t wr_id) override;
  Result<uint32_t> Expose(const std::byte* addr, uint64_t length, uint32_t lkey) override;
  void Revoke(uint32_t key, std::function<void()> revoked) override;
  Status PostRead(const RemoteRegion& remote, std::byte* local, uint32_t lkey,
                  uint64_t wr_id) override;
  void Close(Status why) override;
  std::string peer() const override { return peer_; }

  // Any thread: fails the endpoint with `why` (the first reason wins): QP to error.
  void Fail(Status why);
  // Any thread, for the connection manager's "connection lost" events: like Fail,
  // but a work completion's own error seen afterwards replaces the reason. The peer
  // often disconnects because of that error (a READ with a bad key), and its
  // DISCONNECTED event can be read before the completion is polled; the completion
  // says what went wrong, the event only that the connection went.
  void FailLost(Status why);

  // In a pass (the fabric's progress_mutex_ held).
  ibv_cq* cq() const { return cq_; }
  struct PassResult {
    bool progressed = false;  // some completion was polled
    bool finished = false;    // kDisconnected delivered: release the endpoint
  };
  // Drains the CQ and delivers; once failed and nothing is outstanding, delivers
  // kDisconnected and says finished (the fabric then releases the endpoint). `arm`:
  // request the CQ's next completion event before polling it (event mode).
  PassResult Progress(bool arm);
  // Destroys the QP, CQ, send ring and cm_id. Post* fail with kUnavailable after.
  void Release();
  bool disconnected() const { return disconnected_; }

 private:
  // kWindow: a memory-window bind (signalled, so it frees its slot).
  enum class WrKind : uint64_t { kWindow = 0, kSend = 1, kRecv = 2, kRead = 3 };
  // A work request on the send queue, in posting order, until a completion of it
  // or of a later one retires it.
  struct Posted {
    uint64_t seq;       // its wr_id value
    uint64_t ring_end;  // the send ring's head once it was posted
  };
  struct QueuedSend {
    std::vector<std::byte> bytes;
  };
  struct QueuedRead {
    RemoteRegion remote;
    std::byte* local;
    uint32_t lkey;
    uint64_t wr_id;
  };
  // Binds `window` under `rkey` over [addr, addr + length) of `mr`.
  struct QueuedWindowOp {
    ibv_mw* window;
    uint32_t rkey;
    ibv_mr* mr;
    uint64_t addr;
    uint64_t length;
  };
  using Queued = std::variant<QueuedSend, QueuedRead, QueuedWindowOp>;

  // wr_id: kind in bits 62-63, bit 61 set when signalled (its completion is
  // counted in outstanding_), the value below.
  static constexpr uint64_t kSignalledBit = uint64_t{1} << 61;
  static uint64_t MakeWrId(WrKind kind, uint64_t value, bool signalled = true) {
    return (static_cast<uint64_t>(kind) << 62) | (signalled ? kSignalledBit : 0) | value;
  }
  // Requires mutex_. Records a send-queue post (after ibv_post_send succeeded).
  void NoteSendPostedLocked(uint64_t seq, bool signalled);
  // Requires mutex_. A send-queue completion of `seq`: frees its slot and the slots
  // (and ring bytes) of everything posted before it.
  void RetireSendsLocked(uint64_t seq);
  // Requires mutex_. Posts a send from `data` (copied inline or into the ring);
  // false when the send queue or the ring has no room now.
  Result<bool> TryPostSendLocked(std::span<const SgEntry> sgl, uint64_t total);
  Result<bool> TryPostReadLocked(const QueuedRead& read);
  Result<bool> TryPostWindowOpLocked(const QueuedWindowOp& op);
  // Requires mutex_. Posts `op` now, or queues it behind earlier work.
  Status PostOrQueueLocked(Queued op);
  // Requires mutex_. Posts queued work while there is room.
  Status DrainQueueLocked();
  void FailLocked(Status why);
  // Progress's steps. One work completion: accounts for it and queues what it
  // delivers.
  void OnWorkCompletionLocked(const ibv_wc& wc, std::vector<Completion>& deliveries);
  // Failed with nothing outstanding: fails the reads still queued and ends with
  // kDisconnected.
  void FinishLocked(std::vector<Completion>& deliveries);
  std::string VerbError(std::string_view verb, int rc) const;

  VerbsFabric& fabric_;
  rdma_cm_id* id_;
  const std::string peer_;
  CompletionHandler handler_;

  mutable std::mutex mutex_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  uint32_t inline_limit_ = 0;
  uint32_t send_slots_ = 0;  // send-queue entries free
  uint32_t send_queue_depth_ = 0;
  // The send ring: registered copy space for non-inline sends, freed in order as
  // send completions arrive (RC completes a send queue in order).
  std::vector<std::byte> ring_;
  ibv_mr* ring_mr_ = nullptr;
  uint64_t ring_head_ = 0;        // bytes ever allocated (offset = head % size), incl. skips
  uint64_t ring_tail_ = 0;        // bytes ever released
  std::deque<Posted> posted_;     // send-queue work requests not retired yet
  uint64_t next_seq_ = 1;         // of send-queue work requests
  uint32_t unsignalled_run_ = 0;  // inline sends posted unsignalled since a signalled one
  std::deque<Queued> queued_;
  std::unordered_map<uint64_t, uint64_t> reads_;  // the read's seq -> caller's wr_id
  // The memory windows of live offers, by their rkey.
  std::unordered_map<uint32_t, ibv_mw*> offered_windows_;
  RandomKeys random_tags_;    // the random low byte of window rkeys
  uint64_t outstanding_ = 0;  // posted receives and signalled requests not completed yet
  bool failed_ = false;
  bool failure_is_lost_ = false;  // failure_ came from FailLost
  Status failure_;
  bool released_ = false;
  bool disconnected_ = false;  // progress thread: kDisconnected delivered
};

class VerbsFabric final : public ProgressFabric {
 public:
  explicit VerbsFabric(const Config& config);
  ~VerbsFabric() override;

  // Opens the device, allocates the PD and the channels, starts the threads.
  // kUnavailable when no device (or not the configured one) can be used.
  Status Init();

  Result<MemoryKeys> Register(std::byte* addr, uint64_t length) override;
  void Deregister(const MemoryKeys& keys) override;
  Result<std::string> Listen(const std::string& host, AcceptHandler on_accept) override;
  Result<std::shared_ptr<Endpoint>> Connect(const std::string& endpoint,
                                            std::span<const std::byte> private_data) override;
  bool Poll() override {
    return TryCallerPass([this] { return ProgressAllLocked(/*arm=*/false); }) ==
           CallerPass::kProgressed;
  }

  // For endpoints. config() is the config the fabric started with; its polling is
  // the starting mode only (polling() is the mode now).
  const Config& config() const { return config_; }
  ibv_pd* pd() const { return pd_; }
  ibv_comp_channel* comp_channel() const { return comp_channel_; }
  const std::string& device_name() const { return device_name_; }
  uint32_t max_qp_wr() const { return max_qp_wr_; }
  uint32_t max_rd_atomic() const { return max_rd_atomic_; }
  // True when offers are type-2 memory windows (see the header comment).
  bool uses_windows() const { return uses_windows_; }
  // The region registered under `lkey`, or nullptr.
  ibv_mr* FindRegion(uint32_t lkey);
  // Wake() makes the progress thread look at every endpoint (a failure needs
  // finishing).

 private:
  Status OpenDevice();
  // The cm_id resolved to our device (and port, when the knob names one).
  Status CheckDevice(rdma_cm_id* id, const std::string& what) const;
  Status AcceptRequest(rdma_cm_id* id, std::span<const std::byte> private_data);
  void Adopt(const std::shared_ptr<VerbsEndpoint>& endpoint);
  std::shared_ptr<VerbsEndpoint> FindByCmId(rdma_cm_id* id);
  void CmLoop();
  void ProgressLoop() override;
  void StopOtherThreads() override;
  void TearDownLocked() override;
  // One pass over the endpoints (busy mode, and after every wake-up in event mode);
  // `arm`: request a completion event on every CQ first (event mode). True if any
  // completion was polled. Requires progress_mutex_.
  bool ProgressAllLocked(bool arm);
  // Event mode: sleeps until a completion event or a wake-up. Progress thread only.
  void SleepForEvents();
  rdma_conn_param ConnParam(uint32_t qp_num, std::span<const std::byte> private_data) const;

  const Config config_;
  ibv_context** cm_devices_ = nullptr;  // rdma_get_devices(); owns the contexts
  ibv_context* context_ = nullptr;
  std::string device_name_;
  uint32_t max_qp_wr_ = 0;
  uint32_t max_rd_atomic_ = 0;
  bool uses_windows_ = false;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_channel_ = nullptr;
  rdma_event_channel* cm_channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  AcceptHandler on_accept_;
  std::thread cm_thread_;

  std::mutex regions_mutex_;
  std::unordered_map<uint32_t, ibv_mr*> regions_;  // by lkey

  std::mutex endpoints_mutex_;
  std::unordered_map<rdma_cm_id*, std::shared_ptr<VerbsEndpoint>> endpoints_;
  uint64_t endpoints_version_ = 0;  // bumped on every change
  // Guarded by progress_mutex_: the endpoints as of endpoints_version_.
  std::vector<std::shared_ptr<VerbsEndpoint>> snapshot_;
  uint64_t snapshot_version_ = ~uint64_t{0};
};

}  // namespace artune::transport::fabric::verbs
