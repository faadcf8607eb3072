// The relay's insides (relay.h has the contract): the event loop's state and the
// events transport threads hand it. relay.cc: start, handlers, loop, peers;
// relay_conns.cc: a carried connection's sockets; relay_origin.cc: the interposer's
// questions and the per-destination listeners.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "grpc_splitter.h"
#include "relay.h"
#include "relay_wire.h"
#include "write_queue.h"

namespace artune::relay {

// How often the loop pings its peer relays (relay_peers.cc says why).
inline constexpr auto kPingInterval = std::chrono::milliseconds(250);

// "host" of "host:port" or "[v6]:port", and back.
std::string HostOf(const std::string& address);
std::string JoinHostPort(const std::string& host, uint16_t port);
// Adds the per-protocol counters of `stats` to `sum` (kProtocolCount entries).
void AddStats(transport::ProtocolStats* sum, const transport::Stats& stats);

// A request of one slice that owns its bytes (Open, Ack).
struct OneSlice {
  explicit OneSlice(std::vector<std::byte> encoded) : bytes(std::move(encoded)), slice(bytes) {}
  std::span<const transport::ConstSlice> request() const { return {&slice, 1}; }
  std::vector<std::byte> bytes;
  transport::ConstSlice slice;
};

// A Data request's stream bytes kept past its handler: held in its memory, or
// copied (RelayImpl::Keep).
struct HeldChunk {
  DataHeader header;
  HeldBytes bytes;
};
// Keeps a held request (Message::Share) and its charge to the relay's held total
// (RelayImpl::held_) until the last of its pieces is written.
class HeldRequest {
 public:
  HeldRequest(transport::Message message, std::shared_ptr<std::atomic<uint64_t>> total,
              uint64_t charge)
      : message_(std::move(message)), total_(std::move(total)), charge_(charge) {}
  HeldRequest(const HeldRequest&) = delete;
  HeldRequest& operator=(const HeldRequest&) = delete;
  ~HeldRequest() { total_->fetch_sub(charge_); }

 private:
  transport::Message message_;
  std::shared_ptr<std::atomic<uint64_t>> total_;
  uint64_t charge_;
};

// Another relay's transport server, and this relay's client of it.
struct Peer : std::enable_shared_from_this<Peer> {
  std::string address;
  std::string return_address;  // origin role: where that relay pushes data back
  std::unique_ptr<transport::Client> client;
  size_t conns = 0;
  // Shared with the ping completions, which run on transport threads: they hold
  // this, never the Peer, because the last owner of a Peer destroys its client,
  // which joins the thread the completion runs on.
  struct PingState {
    std::atomic<int> in_flight{0};
  };
  std::shared_ptr<PingState> ping = std::make_shared<PingState>();
  // Calls that found every one of the client's call slots (max_outstanding) taken,
  // oldest first: the loop never waits for a slot, since a hung peer would then
  // stall every connection this relay carries, its pings included. They start as
  // calls to the peer complete (SlotFreedEvent) and on each ping pass.
  struct WaitingCall {
    std::string_view method;  // one of relay_wire.h's constants
    std::span<const transport::ConstSlice> request;
    std::shared_ptr<const void> keep;  // owns `request` and the bytes it points into
    transport::CallOptions options;
    transport::Client::Done done;
  };
  std::deque<WaitingCall> waiting;
  // A Refresh() of the client runs off the loop (RelayImpl::StartRefresh): its
  // calls wait for it, since TryCallAsync refuses while a handshake is due.
  bool refreshing = false;
  // How many wait, for the completions (transport threads; held as PingState is).
  std::shared_ptr<std::atomic<size_t>> waiting_count = std::make_shared<std::atomic<size_t>>(0);
  // Liveness, kept by the loop: when the peer was last heard from (a reply to any
  // call, a request from it), its client's completed calls then, and the pings
  // that timed out since.
  std::chrono::steady_clock::time_point last_heard = std::chrono::steady_clock::now();
  uint64_t calls_completed = 0;
  int pings_missed = 0;
  // Where the loop reads sockets carried to this peer: registered memory of its
  // client, so a large message is sent from it in place (ReadSocket). Loop only.
  transport::Buffer read_buffer;
};

// One carried connection as seen from one end: `self` is kOrigin for the program's
// side, kTarget for the server's side.
struct Conn {
  Conn(Toward self_end, GrpcSplitter::Side side) : self(self_end), splitter(side) {}
  Toward self;
  uint64_t session = 0;
  uint64_t id = 0;
  int fd = -1;
  std::shared_ptr<Peer> peer;
  GrpcSplitter splitter;  // reads what this end's socket says
  bool connecting = false;
  uint32_t events = 0;  // the epoll interest registered
  // Socket -> peer.
  bool read_closed = false;
  uint64_t sent = 0;
  uint64_t acked = 0;
  uint64_t next_seq = 0;
  // Peer -> socket.
  uint64_t expect_seq = 0;
  std::map<uint64_t, HeldChunk> reorder;
  WriteQueue out;
  uint64_t written = 0;
  uint64_t ack_sent = 0;
  bool fin_pending = false;
  bool write_closed = false;
  // A Data handler writes this socket outside the state lock (TryWriteNow), so the
  // loop that wakes for the other direction meanwhile does not wait for it. Until
  // FinishHandlerWrite: nobody else writes or shuts down the socket, and a close
  // (CloseConn) only marks `close_after_write` (whether with a reset) and leaves
  // the fd open, so it is never reused under the handler's write.
  bool handler_writing = false;
  std::optional<bool> close_after_write;
};

// The Open handler waits for the loop's verdict, so the origin learns whether the
// connection can be carried back before it sends any of the program's bytes.
struct OpenVerdict {
  // Sets the verdict once and wakes the waiter.
  void Decide(Status status);
  // The verdict, or kUnavailable when none came within `wait`.
  Status Await(std::chrono::milliseconds wait);

  std::mutex mutex;
  std::condition_variable decided;
  std::optional<Status> status;
};
struct OpenEvent {
  OpenRequest open;
  std::shared_ptr<OpenVerdict> verdict;
};
struct OpenedEvent {  // origin role: the target accepted this connection
  uint64_t session;
  uint64_t conn;
};
struct DataEvent {
  HeldChunk chunk;
};
struct AckEvent {
  Ack ack;
};
struct ConnFailedEvent {  // a call for this connection failed
  Toward self;
  uint64_t session;
  uint64_t conn;
  std::string why;
};
struct PeerDeadEvent {
  std::string address;
  std::string why;
};
// A handler wrote to this connection's socket and left the rest (an ack due, a
// socket error) to the loop.
struct WriteEvent {
  Toward self;
  uint64_t session;
  uint64_t conn;
};
struct PingFailedEvent {
  std::string address;
  Status why;
};
struct SlotFreedEvent {  // a call to this peer completed while others waited
  std::string address;
};
// A setup job (RelayImpl::WithPeer) is over: a dial of a new peer (`existing`
// null; `dialed` its client or why not) or a push of the live knobs to `existing`.
struct PeerSetUpEvent {
  std::string address;
  std::shared_ptr<Peer> existing;
  Result<std::unique_ptr<transport::Client>> dialed = Status::Unavailable("not dialled");
  Status pushed;  // the knobs' push (Ok when there was none)
};
// A Data handler's write outside the state lock (TryWriteNow) is over, and the
// lock was busy: the loop finishes it. `conn` stays valid: a connection that
// handler_writing marks is never destroyed before FinishHandlerWrite.
struct HandlerWroteEvent {
  Conn* conn;
  size_t taken;    // bytes the socket took
  HeldBytes rest;  // the chunk's bytes it did not take
  bool healthy;    // false: the socket failed
};
struct PeerRefreshedEvent {  // a job's client->Refresh() is over
  std::shared_ptr<Peer> peer;
  Status status;
};
using Event = std::variant<OpenEvent, OpenedEvent, DataEvent, AckEvent, ConnFailedEvent,
                           PeerDeadEvent, PingFailedEvent, WriteEvent, SlotFreedEvent,
                           PeerSetUpEvent, PeerRefreshedEvent, HandlerWroteEvent>;

// What waits for a peer's setup, run on the loop with the peer or why there is none.
using PeerReady = std::function<void(Result<std::shared_ptr<Peer>>)>;

// Threads for what can wait on a peer (a handshake: up to the control deadline,
// 10 s), so the event loop never does: each job posts its outcome as an event.
// Start and JoinFinished on the loop thread; JoinAll once the loop has stopped.
class BackgroundJobs {
 public:
  void Start(std::function<void()> job);
  // Joins the jobs that are over (each already ended, so this does not wait).
  void JoinFinished();
  void JoinAll();

 private:
  struct Job {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> over;
  };
  std::vector<Job> jobs_;
};

// A per-destination loopback listener of the origin role.
struct Listener {
  int fd = -1;
  std::string host;       // the destination
  uint16_t dst_port = 0;  // its port
  uint16_t port = 0;      // the loopback port the program is sent to
  std::shared_ptr<Peer> peer;
};

class RelayImpl;
// The relay whose event loop runs on this thread (nullptr on other threads).
inline thread_local const RelayImpl* loop_thread_of = nullptr;

class RelayImpl final : public Relay {
 public:
  explicit RelayImpl(RelayOptions options);
  ~RelayImpl() override;
  Status Init();

  std::string address() const override;
  std::string fabric() const override;
  RelayCounters counters() const override;
  // The per-protocol counters of this relay's clients, past and present (any thread).
  transport::Stats ClientStats() const;
  void Shutdown() override;

 private:
  using ConnKey = std::pair<uint64_t, uint64_t>;  // (session, conn)
  // relay.cc
  void RegisterHandlers(transport::Server& server);
  void Post(Event event);
  void Loop();
  void DrainInbox();
  void Handle(OpenEvent& event);
  Status OpenTargetConn(const OpenRequest& open, Result<std::shared_ptr<Peer>> peer);
  void Handle(OpenedEvent& event);
  void Handle(DataEvent& event);
  void Handle(AckEvent& event);
  void Handle(ConnFailedEvent& event);
  void Handle(PeerDeadEvent& event);
  void Handle(WriteEvent& event);
  // From a Data handler: delivers `chunk` and writes it to the socket on this
  // thread, straight from the request's memory, when it is the connection's next
  // chunk and the state lock is free; what the socket does not take waits in the
  // queue (Keep). The socket write itself runs outside the state lock (a loopback
  // write wakes the reader, who often takes this thread's core at once: the loop
  // would wait for the lock behind it). False (nothing done) when the loop must
  // take it instead.
  bool TryWriteNow(const ChunkView& chunk, const transport::Message& request);
  // `chunk`'s bytes from stream offset `skip` on, kept past the handler: held in
  // `request`'s memory (Message::Share) while the relay's held total stays within
  // held_limit, else copied. Any thread.
  HeldBytes Keep(const ChunkView& chunk, const transport::Message& request, size_t skip);
  // The end of that write, under the state lock: on the handler's thread when it
  // got the lock back at once (`on_loop` false: no transport calls, they go to the
  // loop as a WriteEvent), else on the loop (HandlerWroteEvent).
  void FinishHandlerWrite(Conn& conn, size_t taken, HeldBytes rest, bool healthy, bool on_loop);
  void Handle(HandlerWroteEvent& event);
  // On the handler's thread, after its write: the ack, the end or the reset due go
  // to the loop (transport calls may wait for a slot); else the epoll interest.
  void AfterHandlerWrite(Conn& conn, bool healthy);
  void Handle(PingFailedEvent& event);
  // Whether `peer` answered a call since the last look (its client's completed
  // calls went up): then it was heard from now.
  static void NoteReplies(Peer& peer);
  // After a gap in the loop's runs (this relay was stopped or starved): every peer
  // counts as heard from now.
  void ForgiveOwnPause();
  void PingPeers();
  // Starts a call to `peer` now, or queues it when its call slots are all taken
  // (Peer::waiting); never waits. `keep` owns `request` and what it points into.
  void StartCall(Peer& peer, std::string_view method,
                 std::span<const transport::ConstSlice> request, std::shared_ptr<const void> keep,
                 transport::CallOptions options, transport::Client::Done done);
  void StartWaitingCalls(Peer& peer);
  void Handle(SlotFreedEvent& event);
  // Runs client->Refresh() for `peer` on a job; its waiting calls start after it.
  void StartRefresh(Peer& peer);
  void Handle(PeerRefreshedEvent& event);
  // Runs `ready` with the peer relay at `address` once it is connected and, in the
  // target role, has this relay's live knobs: now when it is, else after a setup
  // job (one per address at a time; later requests wait for the same one).
  void WithPeer(const std::string& address, PeerReady ready);
  // Target role: whether `client`'s agreed live knobs differ from this relay's.
  bool KnobsBehind(const transport::Client& client) const;
  void Handle(PeerSetUpEvent& event);
  void DropPeer(const std::string& address);
  Result<std::string> ReturnAddressToward(const std::string& host);
  // Target role: the live knobs of this relay's server (`artune apply config
  // --live`) also govern what it sends back, so they are pushed to the origins'
  // return-path servers, at connect and whenever they change.
  void FollowLiveConfig();
  static Status PushLiveConfig(transport::Client& client, const transport::Config& config);
  void Log(const std::string& line) const;
  // relay_conns.cc
  Conn* FindConn(Toward self, uint64_t session, uint64_t conn);
  // "connection 3 of session 1f…", the same words on both relays, for the logs.
  static std::string ConnName(const Conn& conn);
  Conn& AddConn(std::unique_ptr<Conn> conn);
  void UpdateInterest(Conn& conn);
  void OnConnEvents(Conn& conn, uint32_t events);
  void ReadSocket(Conn& conn);
  void WriteSocket(Conn& conn);
  // Hands the queued bytes to the socket until it is full or they are gone; false
  // when the socket broke. Never calls the transport (safe on a handler's thread).
  bool FlushOut(Conn& conn);
  // `source`: the registered buffer `bytes` lie in (nullptr: none); a large read's
  // payloads are then sent from it in place, and it goes with the call.
  void SendData(Conn& conn, std::span<const std::byte> bytes, const std::vector<ByteRun>& runs,
                uint8_t flags, transport::Buffer* source = nullptr);
  void SendAck(Conn& conn);
  void Deliver(Conn& conn, HeldChunk chunk);
  // Closes the socket (with a reset when `reset`), tells the peer when `tell_peer`,
  // and forgets the connection. `conn` is invalid afterwards. While a Data handler
  // writes the socket (handler_writing) the connection is forgotten at once and
  // the socket closed when the handler is done (closing_conns_).
  void CloseConn(Conn& conn, bool reset, bool tell_peer);
  // Closes `conn`'s socket (with a reset when `reset`).
  static void CloseSocket(Conn& conn, bool reset);
  void MaybeFinish(Conn& conn);
  // relay_origin.cc
  Status StartControlSocket();
  void AcceptAskers();
  // Reads the question of `asker` (readable) and answers it, now or once the peer
  // relay it needs is set up (WithPeer).
  void AnswerQuestion(int asker);
  void Answer(int asker, const std::string& host, uint16_t port,
              Result<std::shared_ptr<Peer>> peer);
  // Closes the askers that said nothing for a second.
  void DropSilentAskers();
  void AcceptCarried(Listener& listener);
  Result<uint16_t> ListenerFor(const std::string& host, uint16_t port, std::shared_ptr<Peer> peer);

  RelayOptions options_;
  uint64_t session_ = 0;
  // Servers: the target's (from --listen) and the origin's return-path ones, by host.
  std::map<std::string, std::unique_ptr<transport::Server>> servers_;
  std::string address_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int control_fd_ = -1;
  std::thread loop_;
  BackgroundJobs jobs_;
  std::atomic<bool> stopping_{false};

  // Guards the event-loop state below: the loop holds it except in epoll_wait, a
  // Data handler try-locks it to write in-order bytes straight to the socket
  // (saving the hand-off to the loop thread per chunk). Taken before inbox_mutex_.
  std::mutex state_mutex_;
  mutable std::mutex inbox_mutex_;
  std::vector<Event> inbox_;

  // Event-loop state.
  std::map<std::string, std::shared_ptr<Peer>> peers_;
  std::map<uint64_t, std::unique_ptr<Conn>> origin_conns_;
  std::map<ConnKey, std::unique_ptr<Conn>> target_conns_;
  std::map<int, Conn*> conn_by_fd_;
  // Connections closed while a Data handler wrote their socket: no longer found,
  // their socket closed by FinishHandlerWrite.
  std::map<Conn*, std::unique_ptr<Conn>> closing_conns_;
  std::map<int, Listener> listeners_;                                      // by fd
  std::map<std::pair<std::string, uint16_t>, int> listener_by_dst_;        // -> fd
  std::map<std::string, std::chrono::steady_clock::time_point> no_relay_;  // host -> when
  // WithPeer's waiters by address, while that address's setup job runs.
  std::map<std::string, std::vector<PeerReady>> setups_;
  // The interposer's connections whose question has not arrived yet: fd -> when.
  std::map<int, std::chrono::steady_clock::time_point> askers_;
  // Peers dropped a moment ago, kept until the resets sent to them are out.
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::shared_ptr<Peer>>>
      retired_peers_;
  uint64_t next_conn_ = 1;
  // ReadSocket's when the peer's allocator has no buffer to spare.
  std::unique_ptr<std::byte[]> read_buffer_;
  std::chrono::steady_clock::time_point last_ping_{};
  std::chrono::steady_clock::time_point last_loop_ = std::chrono::steady_clock::now();

  // Counters (any thread reads them).
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> queued_bytes_{0};
  std::atomic<uint64_t> copied_bytes_{0};
  // Request memory held for the queues (Keep), as Message::Share counts it; shared
  // with the HeldRequests, which may outlive a connection (in an event).
  std::shared_ptr<std::atomic<uint64_t>> held_ = std::make_shared<std::atomic<uint64_t>>(0);
  mutable std::mutex stats_mutex_;
  transport::ProtocolStats dropped_stats_[transport::kProtocolCount];  // of peers gone
};

}  // namespace artune::relay
