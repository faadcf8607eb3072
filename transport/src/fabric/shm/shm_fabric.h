// The shm fabric: the fabric interface (fabric.h) between processes on one host,
// over shared-memory rings (shm_ring.h), as UCX's posix/cma transports do.
//
// Connection setup: the server listens on a unix-domain SOCK_SEQPACKET socket in
// the abstract namespace ("shm:@artune-shm-<uid>-<pid>-<n>-<random>"; nothing is
// left in the file system whatever way the process ends). A client connects and
// sends its hello (private data). The server accepts only peers of its own uid
// (SO_PEERCRED), creates the segment (a memfd, sized and sealed against shrinking
// and growing, so the peer cannot make this side's mapping fault) and a doorbell
// (shm_doorbell.h), and passes the segment and the doorbell's client
// end back with SCM_RIGHTS. The socket stays open for liveness: end of
// stream on it (the peer closed or died, SIGKILL included) tears the endpoint down.
// The memfd has no name anywhere: it goes away when both sides have unmapped it.
//
// Eager sends: PostSend copies the message into the peer-bound ring; the peer's
// progress thread copies it into the next posted receive buffer.
//
// Rendezvous reads: Expose also publishes the offer in the segment's offer table
// (shm_offers.h); a reader whose request lies inside a published offer copies it
// with process_vm_readv at once, in batches of one system call per progress pass,
// without a word to the owner; Revoke's callback waits for a batch that may have
// seen the offer. Anything else (the table was full, a stale or foreign key, a
// range outside the offer, no ptrace rights) takes the request path:
// the reader asks the owner through the ring (kReadRequest); the
// owner looks the key up in its own endpoint's offers and checks the range, as tcp
// does. If the range is offered it replies kReadGrant and counts the grant; the
// reader copies once with process_vm_readv from the owner's address space (as
// UCX's cma) and answers kReadDone; Revoke's callback waits for the grants in
// flight. A peer able to process_vm_readv this process could read any of its
// memory anyway (same uid, ptrace rights): the grant keeps an honest peer within
// its offers and makes revocation safe, it is no barrier against a hostile one.
// Where process_vm_readv is refused (EPERM: no ptrace rights, Yama, containers) or
// ARTUNE_SHM_CMA=0, the reader asks for kCopy instead: the owner copies the bytes
// through the ring (kReadData records), checked against the offer as it goes.
// That fallback is logged once per process and counted (ShmReadCounters, Stats).
//
// Threading: one progress thread per fabric polls every endpoint's inbound ring
// (spinning in busy mode; in event mode blocking in epoll on the endpoints'
// doorbells and sockets after asking the producers for a wake-up; in adaptive mode
// spinning for poll_spin_us after the last record, then blocking). A caller
// waiting for its own call in busy or adaptive polling runs the passes itself
// (fabric.h: caller-driven progress) while the progress thread parks, so a reply
// is taken off the ring by the thread that waits for it, with no hand-off. A pass
// runs under progress_mutex_: "progress thread only" below means "in a pass".
// Posts from other threads write into the ring inline; only a full ring queues
// them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
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
#include "fabric/shm/shm_ring.h"

namespace artune::transport::fabric::shm {

class ShmFabric;

// epoll tags: the low 3 bits of epoll_event.data.u64 (endpoints are 8-aligned).
inline constexpr uint64_t kTagLiveness = 0;  // endpoint pointer: socket or pidfd
inline constexpr uint64_t kTagRing = 1;      // endpoint pointer | 1: its doorbell
inline constexpr uint64_t kTagHello = 2;     // (fd << 3) | 2: accepted, hello not read yet
inline constexpr uint64_t kTagWake = 3;
inline constexpr uint64_t kTagListener = 4;

// Reads done over shm in this process, by how they copied (process-wide: Stats).
struct ShmReadCounters {
  std::atomic<uint64_t> one_copy{0};     // process_vm_readv by the reader
  std::atomic<uint64_t> unasked{0};      // of those, read from the offer table
  std::atomic<uint64_t> owner_copy{0};   // the fallback: copied by the owner
  std::atomic<uint64_t> cma_refused{0};  // endpoints that fell back
};
ShmReadCounters& ReadCounters();

// Who may reach a shm listener of this process: the boot, the network namespace
// (the listener's abstract socket lives there) and the user (a server accepts
// its own uid only), as "boot_id/netns inode/uid". Two processes with equal
// identities can connect over shm. kUnavailable when /proc does not say.
Result<std::string> HostIdentity();

// What a server tells its clients of its identity (issue 26, 10: not the boot id,
// netns and uid themselves): the hex SHA-256 of `salt` (the handshake's one-time
// data ticket) and `identity`. A client with the same identity computes the same
// digest; nobody learns the identity from it, nor links two handshakes' digests.
std::string HostIdentityDigest(const std::string& identity, const std::string& salt);

// A registered region (lkey -> range). An owner-side copy holds a reference and
// copies under `mutex`, so Deregister stops it between fragments (fabric.h: no
// fabric operation touches the region after Deregister returns).
struct Region {
  std::byte* addr = nullptr;
  uint64_t length = 0;
  std::mutex mutex;
  bool deregistered = false;  // guarded by mutex
};

// An offer on one endpoint. Grants in flight hold Revoke's callbacks back.
struct Offer {
  std::byte* addr = nullptr;
  uint64_t length = 0;
  std::shared_ptr<Region> region;
  std::mutex mutex;
  std::optional<uint32_t> slot;  // in the offer table; guarded by the offers mutex
  bool revoked = false;          // guarded by mutex
  uint32_t grants = 0;           // guarded by mutex
  std::vector<std::function<void()>> when_released;  // guarded by mutex
};

// What an accepted or connected endpoint starts from (shm_fabric.cc builds it).
struct Link {
  int socket = -1;    // liveness, and nothing else after the setup
  int doorbell = -1;  // this side's end of the doorbell (shm_doorbell.h)
  int pidfd = -1;     // the peer process (-1 when pidfd_open is unavailable)
  pid_t peer_pid = 0;
  void* segment = nullptr;  // kSegmentBytes, mapped shared
  bool is_server = false;
  std::string peer;
};

class ShmEndpoint final : public Endpoint, public std::enable_shared_from_this<ShmEndpoint> {
 public:
  ShmEndpoint(ShmFabric& fabric, Link link);
  ~ShmEndpoint() override;

  void Start(CompletionHandler handler) override;
  Status PostSend(std::span<const SgEntry> sgl) override;
  Status PostRecv(std::byte* addr, uint64_t length, uint32_t lkey, uint64_t wr_id) override;
  Result<uint32_t> Expose(const std::byte* addr, uint64_t length, uint32_t lkey) override;
  void Revoke(uint32_t key, std::function<void()> revoked) override;
  Status PostRead(const RemoteRegion& remote, std::byte* local, uint32_t lkey,
                  uint64_t wr_id) override;
  void Close(Status why) override;
  std::string peer() const override { return link_.peer; }

  // Progress thread only.
  // Consumes inbound records and flushes queued output; true if anything moved.
  bool Poll();
  // The socket or pidfd was signalled: checks liveness.
  void OnEvent();
  // Before the progress thread blocks: true if it must not (data arrived). Drains
  // the doorbell every few calls (shm_doorbell.h), before it asks for wake-ups.
  bool PrepareToSleep();
  void Awake();
  void Teardown(Status why);
  bool torn_down() const { return torn_down_; }
  const Link& link() const { return link_; }

 private:
  struct PostedRecv {
    std::byte* addr;
    uint64_t length;
    uint64_t wr_id;
  };
  struct PendingRead {
    std::byte* local = nullptr;
    uint64_t remote_addr = 0;
    uint64_t length = 0;
    uint32_t key = 0;
    uint64_t wr_id = 0;
    uint64_t received = 0;  // kCopy: bytes arrived so far
  };
  // Queued output: a record with its payload copied, or a read the owner copies
  // through the ring fragment by fragment (kCopy).
  struct OutItem {
    RecordHeader header{};
    std::vector<std::byte> payload;
    std::shared_ptr<Offer> offer;  // set: a kCopy read being streamed
    const std::byte* source = nullptr;
    uint64_t sent = 0;
  };

  // Writes one record (inline, or queued behind earlier output). send_mutex_ held
  // or not per the name.
  Status SendRecord(const RecordHeader& header, std::span<const SgEntry> payload);
  Status SendRecordLocked(const RecordHeader& header, std::span<const SgEntry> payload);
  Status FlushLocked();
  // Writes as much of a streamed read as fits; true when it is finished.
  Result<bool> StreamLocked(OutItem& item);
  void PublishLocked();
  // The peer broke the ring: the connection ends with `why` (send_mutex_ held).
  void BreakLocked(const Status& why);

  Status OnRecord(const RecordHeader& header);
  Status OnSend(const RecordHeader& header);
  Status OnReadRequest(const RecordHeader& header);
  Status OnReadGrant(uint64_t id);
  Status OnReadData(const RecordHeader& header);
  Status OnReadRefused(uint64_t id);
  Status OnReadDone(uint64_t id);
  Status RequestRead(uint64_t id, const PendingRead& read, ReadMode mode);
  // Reads the queued requests that the offer table covers, in one process_vm_readv;
  // the others go the request path. True if any was taken.
  bool RunDirectReads();
  // RunDirectReads' steps: takes a batch off direct_reads_ (post_mutex_ taken)...
  struct DirectRead {
    uint64_t id;
    PendingRead read;
  };
  std::vector<DirectRead> TakeDirectBatch();
  // ...and, after the process_vm_readv of `covered` returned `n` (errno `error`),
  // settles each read: done, failed or queued again. Returns what to deliver.
  std::vector<Completion> SettleDirectReads(const std::vector<DirectRead>& covered, ssize_t n,
                                            int error);
  // Finishes the withdrawals the reader's batches held back (all at teardown).
  bool SettleWithdrawn(bool all);
  // The part of Revoke after no table read can be under way.
  void FinishRevoke(const std::shared_ptr<Offer>& offer, std::function<void()> revoked);
  void ReleaseGrant(const std::shared_ptr<Offer>& offer);
  void Deliver(const Completion& completion);
  void WakePeer();

  ShmFabric& fabric_;
  Link link_;
  CompletionHandler handler_;
  // Progress thread only: PrepareToSleep's drains of the doorbell (shm_doorbell.h).
  int sleeps_per_drain_ = 1;
  int sleeps_since_drain_ = 0;
  std::atomic<bool> started_{false};

  std::mutex send_mutex_;
  RingWriter out_;
  std::deque<OutItem> send_queue_;
  bool send_closed_ = false;
  std::atomic<bool> has_queued_{false};

  std::mutex post_mutex_;
  std::deque<PostedRecv> posted_recvs_;
  std::unordered_map<uint64_t, PendingRead> pending_reads_;
  // Reads to try from the offer table in the next pass (ids in pending_reads_).
  std::deque<uint64_t> direct_reads_;
  std::atomic<bool> has_direct_{false};
  uint64_t next_read_id_ = 1;
  bool post_closed_ = false;
  // false once process_vm_readv was refused on this endpoint (or ARTUNE_SHM_CMA=0).
  std::atomic<bool> one_copy_;
  const bool simulate_refusal_;  // ARTUNE_SHM_CMA=eperm (tests)

  std::mutex close_mutex_;
  Status close_reason_;

  std::mutex offers_mutex_;
  std::unordered_map<uint32_t, std::shared_ptr<Offer>> offers_;
  bool offers_closed_ = false;
  RandomKeys random_keys_;
  OfferPublisher publisher_;  // this side's offer table
  // Revoked offers a batch of the reader's may still be reading (shm_offers.h).
  struct Withdrawn {
    std::shared_ptr<Offer> offer;
    uint32_t slot = 0;
    uint64_t ticket = 0;
    std::function<void()> revoked;
  };
  std::vector<Withdrawn> withdrawn_;
  std::atomic<bool> has_withdrawn_{false};

  // Progress thread only.
  RingReader in_;
  OfferReader table_reader_;  // the peer's offer table
  // Grants this side gave, by the reader's id: released by kReadDone or teardown.
  std::unordered_map<uint64_t, std::shared_ptr<Offer>> grants_;
  uint64_t copies_in_flight_ = 0;
  bool torn_down_ = false;
};

class ShmFabric final : public ProgressFabric {
 public:
  explicit ShmFabric(PollingMode polling);
  ~ShmFabric() override;

  Status Init();

  Result<MemoryKeys> Register(std::byte* addr, uint64_t length) override;
  void Deregister(const MemoryKeys& keys) override;
  Result<std::string> Listen(const std::string& host, AcceptHandler on_accept) override;
  Result<std::shared_ptr<Endpoint>> Connect(const std::string& endpoint,
                                            std::span<const std::byte> private_data) override;
  // A polling caller that finds nothing for a while yields its core (busy mode).
  bool Poll() override;
  // How many times a pass has looked at the sockets on its way (an epoll_wait
  // that does not wait): for tests, and the system calls of a spin. Any thread.
  uint64_t pass_socket_looks() const { return pass_socket_looks_.load(std::memory_order_relaxed); }
  bool caller_waiting() const override { return true; }

  // For endpoints.
  std::shared_ptr<Region> FindRegion(uint32_t lkey) { return regions_.Find(lkey); }
  Status Watch(ShmEndpoint* endpoint);
  void Unwatch(ShmEndpoint* endpoint);
  void Forget(ShmEndpoint* endpoint);
  // Logs that process_vm_readv was refused (once per process) and counts it.
  void NoteOneCopyRefused(const std::string& peer, int error);

 private:
  void ProgressLoop() override;
  bool WaitPassLocked(int timeout_ms, const std::atomic<bool>& finished) override;
  void TearDownLocked() override;
  // Polls every started endpoint's ring once (and, every so often, the sockets);
  // true if anything moved. Requires progress_mutex_.
  bool PollEndpointsLocked();
  // Asks the peers for a wake-up and blocks in epoll until one comes (or a hello
  // deadline, or timeout_ms when that is not -1), on the progress thread or on a
  // caller's (WaitPass). Requires progress_mutex_.
  void SleepLocked(int timeout_ms, bool caller);
  void AcceptAll();
  // Watches the listener again once an accept pause (AcceptAll) is over; returns
  // `timeout_ms` shortened to the pause's end. Requires progress_mutex_.
  int ResumeAcceptingIfDue(int timeout_ms);
  void OnHello(int fd);
  Status AcceptHello(int fd);
  void WaitForEvents(int timeout_ms);

  // Guarded by progress_mutex_.
  std::vector<std::shared_ptr<ShmEndpoint>> polled_;
  // The passes' looks at the sockets (PollEndpointsLocked).
  uint32_t passes_ = 0;
  bool moved_since_look_ = false;
  Clock::time_point last_socket_look_{};
  // Written in a pass, read from any thread (pass_socket_looks).
  std::atomic<uint64_t> pass_socket_looks_{0};
  int epoll_fd_ = -1;
  int listen_fd_ = -1;
  AcceptHandler on_accept_;

  RegionTable<Region> regions_;

  std::mutex endpoints_mutex_;
  std::unordered_map<ShmEndpoint*, std::shared_ptr<ShmEndpoint>> endpoints_;
  std::vector<std::shared_ptr<ShmEndpoint>> started_;  // the progress thread polls these
  // Set under endpoints_mutex_ whenever started_ or graveyard_ change; a pass
  // looks at it without the lock and takes the lock only when it is set (the
  // mutex on every pass was 3.8 lock/unlock pairs per 100 B event call).
  std::atomic<bool> started_changed_{false};
  std::vector<std::shared_ptr<ShmEndpoint>> graveyard_;
  // Accepted sockets whose hello has not arrived (in a pass).
  std::unordered_map<int, std::chrono::steady_clock::time_point> half_open_;
  // Set while accepting is paused for want of descriptors (in a pass).
  std::optional<std::chrono::steady_clock::time_point> accept_resume_at_;
  std::chrono::milliseconds accept_pause_{0};
};

}  // namespace artune::transport::fabric::shm
