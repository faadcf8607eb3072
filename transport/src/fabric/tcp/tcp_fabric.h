// The tcp fabric: the fabric interface (fabric.h) over non-blocking sockets.
//
// Frames (wire.h, "TCP frames") carry two-sided sends and emulate one-sided reads:
// the reader sends kReadRequest, the owner's progress thread looks the rkey up in its
// registration table, checks [addr, addr + length) against the region, and answers
// with kReadResponse whose body is written straight from the registered memory
// (sendmsg with an iovec pointing into the region). The reader's progress thread
// receives the body straight into the destination buffer.
//
// Threading: one progress thread per fabric runs epoll (blocking in event mode,
// spinning in busy mode), parses incoming frames, serves read requests, flushes
// queued output and delivers completions. Posts from other threads write inline
// when the socket has room (no thread hop on the hot path) and queue the rest.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.h"
#include "fabric/progress_fabric.h"
#include "fabric/random_keys.h"
#include "fabric/region_table.h"
#include "wire.h"

namespace artune::transport::fabric::tcp {

class TcpFabric;

// A registered region. Emulated reads being written out hold a reference, and
// write under write_mutex, so Deregister can revoke a region safely mid-write.
struct Region {
  std::byte* addr = nullptr;
  uint64_t length = 0;
  uint32_t key = 0;
  std::mutex write_mutex;
  bool revoked = false;  // guarded by write_mutex
};

class TcpEndpoint final : public Endpoint, public std::enable_shared_from_this<TcpEndpoint> {
 public:
  TcpEndpoint(TcpFabric& fabric, int fd, std::string peer, bool awaiting_hello);
  ~TcpEndpoint() override;

  void Start(CompletionHandler handler) override;
  Status PostSend(std::span<const SgEntry> sgl) override;
  Status PostRecv(std::byte* addr, uint64_t length, uint32_t lkey, uint64_t wr_id) override;
  Result<uint32_t> Expose(const std::byte* addr, uint64_t length, uint32_t lkey) override;
  void Revoke(uint32_t key, std::function<void()> revoked) override;
  Status PostRead(const RemoteRegion& remote, std::byte* local, uint32_t lkey,
                  uint64_t wr_id) override;
  void Close(Status why) override;
  std::string peer() const override { return peer_; }

  // Progress thread only.
  int fd() const { return fd_; }
  void OnReadable();
  void OnWritable();
  // Fails pending reads, delivers kDisconnected, closes the socket. Idempotent.
  void Teardown(Status why);
  bool torn_down() const { return torn_down_; }
  // Accepted and still waiting for the peer's hello (progress thread).
  bool awaiting_hello() const { return awaiting_hello_; }

 private:
  // Queued output: owned bytes, then optionally bytes of a registered region.
  struct OutChunk {
    std::vector<std::byte> owned;
    std::shared_ptr<Region> region;
    const std::byte* region_data = nullptr;
    uint64_t region_bytes = 0;
    uint64_t written = 0;        // of owned.size() + region_bytes
    bool read_response = false;  // counted in read_responses_queued_
  };
  struct PostedRecv {
    std::byte* addr;
    uint64_t length;
    uint64_t wr_id;
  };
  struct PendingRead {
    std::byte* local;
    uint64_t length;
    uint64_t wr_id;
  };
  enum class Sink { kNone, kSmall, kRecv, kRead };

  // Sends header + sgl; inline when nothing is queued, else queued (copied).
  Status SendFrame(const wire::FrameHeader& header, std::span<const SgEntry> body);
  // Sends a read response whose body comes from `region` (progress thread), unless
  // `max_queued` read responses are queued already: then kProtocolError.
  Status SendReadResponse(uint64_t id, wire::ReadStatus status, std::shared_ptr<Region> region,
                          const std::byte* data, uint64_t length, uint64_t max_queued);
  // Writes queued output until the socket is full. Requires send_mutex_.
  Status FlushLocked();
  Status WriteChunkLocked(OutChunk& chunk, bool& complete);
  void SetWantWriteLocked(bool want);

  Status OnHeader();
  Status OnBodyComplete();
  Status ServeReadRequest(const wire::ReadRequestBody& request, uint64_t id);
  void Deliver(const Completion& completion);

  TcpFabric& fabric_;
  const int fd_;
  const std::string peer_;
  CompletionHandler handler_;  // set once by Start, read by the progress thread

  std::mutex send_mutex_;
  std::deque<OutChunk> send_queue_;
  uint64_t read_responses_queued_ = 0;  // in send_queue_, not yet written in full
  bool want_write_ = false;
  bool send_closed_ = false;

  std::mutex post_mutex_;
  std::deque<PostedRecv> posted_recvs_;
  std::unordered_map<uint64_t, PendingRead> pending_reads_;
  uint64_t next_read_id_ = 1;
  bool post_closed_ = false;

  std::mutex close_mutex_;
  Status close_reason_;  // set by Close before it shuts the socket down

  // What this endpoint's peer may read, by offer key (Expose/Revoke). An offer is a
  // Region of its own, so revoking it stops a read response being written out.
  std::mutex offers_mutex_;
  std::unordered_map<uint32_t, std::shared_ptr<Region>> offers_;
  uint64_t offered_chunks_ = 0;  // the most reads in flight on offers_ (ServeReadRequest)
  bool offers_closed_ = false;
  RandomKeys random_keys_;  // guarded by offers_mutex_

  // Progress thread only: the frame parser.
  bool awaiting_hello_;
  bool torn_down_ = false;
  std::vector<std::byte> in_;  // buffered input
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  bool have_header_ = false;
  wire::FrameHeader header_{};
  Sink sink_ = Sink::kNone;
  std::byte* body_dest_ = nullptr;
  uint64_t body_remaining_ = 0;
  uint64_t body_total_ = 0;
  std::byte small_body_[wire::kMaxHelloBytes];
  PendingRead current_read_{};
  PostedRecv current_recv_{};
};

class TcpFabric final : public ProgressFabric {
 public:
  explicit TcpFabric(PollingMode polling);
  ~TcpFabric() override;

  // Creates the epoll set and starts the progress thread.
  Status Init();

  Result<MemoryKeys> Register(std::byte* addr, uint64_t length) override;
  void Deregister(const MemoryKeys& keys) override;
  Result<std::string> Listen(const std::string& host, AcceptHandler on_accept) override;
  void AdmitOwnUserOnly() override { own_user_only_ = true; }
  Result<std::shared_ptr<Endpoint>> Connect(const std::string& endpoint,
                                            std::span<const std::byte> private_data) override;
  bool Poll() override {
    return TryCallerPass([this] { return RunPassLocked(ExpireAndResume(0)) > 0; }) ==
           CallerPass::kProgressed;
  }
  bool caller_waiting() const override { return true; }

  // For endpoints: the registered region `lkey` names, or nullptr.
  std::shared_ptr<Region> FindRegion(uint32_t lkey) { return regions_.Find(lkey); }
  Status WatchEndpoint(TcpEndpoint* endpoint, bool want_write);
  void UnwatchEndpoint(TcpEndpoint* endpoint);
  // Runs on the progress thread when an accepted connection's hello arrived.
  Status OnHello(TcpEndpoint& endpoint, std::span<const std::byte> private_data);
  // The endpoint is gone: drop the fabric's reference (after the current batch).
  void Forget(TcpEndpoint* endpoint);

 private:
  void ProgressLoop() override;
  bool WaitPassLocked(int timeout_ms, const std::atomic<bool>& /*finished*/) override {
    return RunPassLocked(ExpireAndResume(timeout_ms)) >= 0;
  }
  void TearDownLocked() override;
  // One pass: waits up to `timeout_ms` for events (0: just looks), handles them
  // and frees the endpoints torn down meanwhile. Returns the number of events,
  // or -1 when epoll failed for good. Requires progress_mutex_.
  int RunPassLocked(int timeout_ms);
  void AcceptAll();
  // Progress thread: drops accepted connections whose hello is overdue, and resumes
  // accepting after a pause for running out of descriptors. Returns the epoll
  // timeout until the next such deadline (-1: none).
  int ExpireAndResume(int timeout_ms);
  // Progress thread: stops watching the listener for a while (out of descriptors).
  void PauseAccepting(int error);

  using SteadyClock = std::chrono::steady_clock;
  // Accepted connections awaiting their hello, by deadline (progress thread).
  std::deque<std::pair<SteadyClock::time_point, std::weak_ptr<TcpEndpoint>>> half_open_;
  // Set while accepting is paused (progress thread).
  std::optional<SteadyClock::time_point> accept_resume_at_;
  std::chrono::milliseconds accept_backoff_{0};
  // Data connections at most at once: a share of RLIMIT_NOFILE, so that running
  // out of descriptors here leaves the gRPC control plane room to accept.
  size_t max_endpoints_ = 0;
  bool own_user_only_ = false;  // set before Listen

  int epoll_fd_ = -1;
  int listen_fd_ = -1;
  AcceptHandler on_accept_;

  RegionTable<Region> regions_;

  std::mutex endpoints_mutex_;
  std::unordered_map<TcpEndpoint*, std::shared_ptr<TcpEndpoint>> endpoints_;
  std::vector<std::shared_ptr<TcpEndpoint>> graveyard_;  // freed after each batch
};

}  // namespace artune::transport::fabric::tcp
