// The protocol layer of one data connection, shared by client and server: sends
// messages by the plan protocol.h makes (eager, coalesced eager, rendezvous-read,
// chunked rendezvous), reassembles incoming ones (copying eager data out of the
// receive buffers, reading rendezvous slices with pipelined chunk reads), runs the
// credit-based flow control of the eager receive buffers, and keeps the call table.
//
// Flow control: each end posts eager_buffer_count + 1 receive buffers. A data
// packet costs one of the peer's eager_buffer_count credits; packets without a
// credit wait in order in pending_. Credits come back in every packet's header
// (credits_returned) and, when half of them are owed and nothing else goes out, in
// a kCredit packet, which uses the one spare buffer; the spare comes back with the
// flag kFlagSpareCreditReturned on the next packet. So a credit update never needs
// a credit, and a peer that ignores the rule overflows the posted buffers and is
// dropped by the fabric.
//
// One-way calls (kFlagOneWay) get no response; the server returns them like
// credits: counted in every packet's oneway_done and, when half of max_outstanding
// are owed, sent in a kCredit packet. The client completes that many of its oldest
// one-way calls whose request the server has (eager, or rendezvous after its kFin,
// which comes first on the connection) and frees their slots: so the server never
// holds more than max_outstanding calls, and one packet ends many calls. When the
// spare is out, such a report goes on a regular credit (kFlagCreditOnRegular):
// the client, out of slots, may send nothing that would bring the spare back. A lost
// count would leak slots until the client stalls (tests/transport test it).
//
// Rendezvous reads: a slice's destination is allocated when its reads are posted,
// not when it is announced. At most kReadWindowBytes of destinations are being
// read per connection (one slice at a time when a slice is larger); the other
// announced slices wait in order. A message whose reads have not all completed
// timeout_ms after its first announce drops the connection: reads in flight keep
// their destinations until they complete, so only the connection's end frees them
// from a peer that never answers.
//
// Idle: a server's connection that has no call in flight and receives nothing for
// idle_timeout_ms is closed (it holds a receive pool); the client reconnects.
//
// Lifetimes: a message's source slices stay registered and alive until the peer's
// kFin (or the connection closes), each offered to this connection's peer alone
// (Endpoint::Expose) and revoked at that kFin; read destinations stay alive until
// their reads complete, even for a call that timed out (kAbandoned) or failed.
//
// Threading: every method is thread-safe (one mutex). Completions arrive on the
// fabric's progress thread; user callbacks and handler dispatch run outside the
// mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "allocator.h"
#include "artune/transport/protocol.h"
#include "artune/transport/transport.h"
#include "call_slots.h"
#include "fabric/fabric.h"
#include "message_recycler.h"
#include "stats.h"
#include "timer.h"
#include "wire.h"

namespace artune::transport {

enum class Role { kClient, kServer };

// Bytes of rendezvous destinations one connection reads into at once.
inline constexpr uint64_t kReadWindowBytes = uint64_t{64} << 20;

// Eager receive-buffer geometry, fixed for the connection's life (both ends post
// the same), from the config negotiated when it was opened.
struct Geometry {
  uint64_t buffer_bytes = 0;
  uint32_t buffer_count = 0;
  uint32_t max_outstanding = 0;
};
Geometry GeometryFor(const Config& config);
// `config` with its eager limits clamped to what `geometry`'s buffers can hold.
Config ClampToGeometry(Config config, const Geometry& geometry);

// A server-side request ready for its handler: the engine's reference for the reply.
struct IncomingRequest {
  uint64_t call_id = 0;
  std::string method;
  std::shared_ptr<Message> message;
};

class Connection : public std::enable_shared_from_this<Connection>, public DeadlineTarget {
 public:
  using RequestSink = std::function<void(std::shared_ptr<Connection>, IncomingRequest)>;
  using ClosedSink = std::function<void(Connection&, const Status& why)>;

  Connection(Role role, std::shared_ptr<fabric::Endpoint> endpoint, RegisteredAllocator& allocator,
             StatsRecorder& stats, Geometry geometry, Config config, uint32_t config_epoch,
             Timer* timer, RequestSink on_request, ClosedSink on_closed);
  ~Connection();

  // Posts the receive buffers and starts the endpoint.
  Status Start();

  // New messages use `config` (clamped to the geometry); calls in flight keep theirs.
  void SetConfig(const Config& config, uint32_t epoch);
  const Geometry& geometry() const { return geometry_; }
  // The allocator whose blocks this connection's fabric has registered: responses
  // built from it go out without a copy.
  RegisteredAllocator& allocator() const { return allocator_; }
  // The largest config epoch seen in the peer's packets.
  uint32_t peer_epoch() const { return peer_epoch_.load(std::memory_order_relaxed); }
  bool closed() const { return closed_.load(std::memory_order_relaxed); }
  // True when no call is in flight and none started or finished for `quiet`:
  // a client asks before a call whether the server may be closing it as idle.
  bool QuietFor(std::chrono::milliseconds quiet) const;
  // Counts the connection active at `when` (a client: the moment it began to dial,
  // which is before the server's idle watch started).
  void MarkActiveAt(std::chrono::steady_clock::time_point when);
  // Calls in flight, with a client's one-way calls until the server reports them
  // handled (a retired connection is closed only once this is 0).
  size_t calls_in_flight() const;
  std::string peer() const { return endpoint_->peer(); }

  // Client: sends a request; `done` runs exactly once (maybe before this returns,
  // on error). `deadline` fails the call with kTimeout. A `one_way` call
  // (CallOptions::one_way) has no deadline: `done` runs with an empty Message once
  // the server reports it handled (oneway_done), or with the error when the
  // connection fails first. `slots`, when given, gets the call's slot back just
  // before `done` runs.
  void StartCall(std::string_view method, std::span<const ConstSlice> request,
                 std::chrono::steady_clock::time_point deadline, Client::Done done,
                 bool one_way = false, std::shared_ptr<CallSlots> slots = nullptr);

  // Server: sends the response of `call_id` (slices and the Buffers/request that
  // keep them alive), or `status` as an error response when it is not ok.
  void SendResponse(uint64_t call_id, const Status& status, std::vector<ConstSlice> slices,
                    std::vector<Buffer> owned, std::shared_ptr<Message> keepalive);

  // Closes the connection; calls in flight fail with `why`.
  void Close(const Status& why);

  // A call's deadline (the timer's cookie is the call id).
  void OnDeadline(uint64_t call_id) override { OnTimeout(call_id); }

 private:
  struct Transfer {
    wire::RendezvousEntry entry{};
    Buffer destination;
    std::vector<ChunkRange> chunks;
    size_t next_chunk = 0;
    uint32_t in_flight = 0;
    uint32_t done_chunks = 0;
    bool waiting = false;    // in waiting_transfers_, not yet started or settled
    bool in_window = false;  // its destination counts in reading_bytes_
  };
  // An incoming message being reassembled.
  struct Assembly {
    bool started = false;
    uint32_t slice_count = 0;
    uint32_t received = 0;
    uint64_t announced_bytes = 0;
    std::vector<uint8_t> have;
    Message message;  // its lists from recycler_
    std::vector<ConstSlice> slices;
    std::vector<std::unique_ptr<Transfer>> transfers;
    uint32_t reads_in_flight = 0;
    uint32_t transfers_waiting = 0;  // in waiting_transfers_, not started
    bool had_rendezvous = false;
    // When its first slice was announced: its reads must be done timeout_ms later.
    bool read_clock_started = false;
    std::chrono::steady_clock::time_point announced_at{};
    std::string method;
  };
  struct Call {
    uint64_t id = 0;
    wire::CallState state = wire::CallState::kSending;
    Config config;  // the values this call runs under
    CallDone done;
    Timer::Handle timer_handle{};
    bool has_timer = false;
    // What this end sent: kept until the peer's kFin, and the offers that let the
    // peer read it, revoked then (ReleaseSentLocked).
    std::vector<Buffer> sent_owned;
    std::shared_ptr<Message> sent_keepalive;
    std::vector<uint32_t> offers;
    bool awaiting_fin = false;
    bool one_way = false;  // kFlagOneWay: no response (see the header comment)
    Assembly in;
    Status failure;  // the error, once failed

    // Back to a new call's state, keeping the room its vectors grew (a recycled
    // call allocates nothing for a message of the same shape).
    void Recycle();
  };
  struct ReadTarget {
    uint64_t call_id;
    size_t transfer;
    ChunkRange chunk;
  };
  struct WaitingTransfer {
    uint64_t call_id;
    size_t transfer;
  };
  struct PendingPacket {
    Buffer buffer;
    uint64_t length;
    bool credit_packet;
  };
  // What a completion leaves to run once the mutex is released, in order: a call's
  // end, a request for the handler, or anything else. The first two have their own
  // kinds so that queuing them allocates nothing (a lambda holding them would not
  // fit std::function's inline room).
  struct CallEnd {
    CallDone done;
    Result<Message> result;
  };
  using Callback = std::variant<std::function<void()>, CallEnd, IncomingRequest>;
  using Callbacks = std::vector<Callback>;
  // Runs them and empties `callbacks` (its room kept).
  void RunCallbacks(Callbacks& callbacks);

  void OnCompletion(const fabric::Completion& completion);
  void OnRecv(const fabric::Completion& completion, Callbacks& callbacks);
  void OnRead(const fabric::Completion& completion, Callbacks& callbacks);
  void OnDisconnected(const Status& why, Callbacks& callbacks);

  // Parses and applies one received packet; an error drops the connection.
  Status HandlePacket(const std::byte* data, uint64_t length, Callbacks& callbacks);
  // HandlePacket's steps (always inlined: they run for every packet, and GCC
  // left them as calls in HandlePacket; defined in connection_receive.cc, the
  // one file that calls them). The header's kinds, direction and
  // lengths agree with a packet of `length` bytes.
  [[gnu::always_inline]] inline Status CheckPacketShape(const wire::PacketHeader& header,
                                                        uint64_t length) const;
  // The credits and config epoch every packet carries.
  [[gnu::always_inline]] inline Status TakeFlowControl(const wire::PacketHeader& header);
  // The peer read a message of ours (kFin): releases it. Unknown calls are stale.
  void HandleFin(uint64_t call_id);
  // The server reported `count` one-way calls handled: their slots go back.
  Status TakeOnewayDone(uint32_t count, Callbacks& callbacks);
  // The call a data or error packet belongs to (a server starts it); nullptr with
  // an ok status: a late response, dropped.
  [[gnu::always_inline]] inline Status FindIncomingCall(const wire::PacketHeader& header,
                                                        Call*& call);
  // The peer failed the call (kError, responses only).
  Status HandleErrorPacket(Call& call, const wire::PacketHeader& header, const std::byte* payload,
                           Callbacks& callbacks);
  Status HandleSlices(Call& call, const wire::PacketHeader& header, const std::byte* entries,
                      const std::byte* payload, Callbacks& callbacks);
  Status HandleAnnounce(Call& call, const wire::PacketHeader& header, const std::byte* entries,
                        Callbacks& callbacks);
  Status BeginAssembly(Call& call, const wire::PacketHeader& header, const std::byte* payload);
  void PostReads(Call& call, Transfer& transfer, size_t transfer_index);
  // Starts waiting transfers, in order, while the window has room, and settles
  // those of calls that failed or were abandoned; then finishes the calls that
  // settling completed, except `current` (its caller does).
  void StartWaitingTransfersLocked(Callbacks& callbacks, const Call* current);
  // Settles the transfers of `call` that never started (the call is dead).
  void DropWaitingTransfersLocked(Call& call);
  // Gives the transfer's bytes back to the window.
  void LeaveWindowLocked(Transfer& transfer);
  // A call no longer live (timed out, failed): once none of its reads is in
  // flight, tells the peer it may let go of what it announced (kFin) and forgets it.
  void SettleDeadCallLocked(Call& call);
  // The read watch: one timer per connection, armed while announced messages
  // are being read, that drops the connection when one is late.
  void ArmReadWatchLocked(uint32_t timeout_ms);
  void OnReadWatch();
  // Server: the idle watch, one timer per connection re-armed every
  // idle_timeout_ms, closes a connection with no call that received nothing
  // since the last check and had no call start or finish for idle_timeout_ms.
  void ArmIdleWatchLocked();
  void OnIdleWatch();
  void MaybeFinishAssembly(Call& call, Callbacks& callbacks);

  // Sends a whole message (request or response) for `call`, by the plan.
  Status SendMessageLocked(Call& call, wire::Direction direction, std::string_view method,
                           std::span<const ConstSlice> slices);
  // SendMessageLocked's steps (the inline ones run for every message and are
  // defined in connection.cc, the one file that calls them). The headers of one message's packets:
  // the first carries the method.
  struct MessageHeaders {
    uint64_t call_id = 0;
    wire::Direction direction = wire::Direction::kRequest;
    uint32_t slice_count = 0;
    uint8_t method_bytes = 0;
    uint8_t flags = 0;  // on every packet of the message (kFlagOneWay)
    bool method_sent = false;
    wire::PacketHeader Next(wire::PacketKind kind, uint32_t entries);
  };
  // Checks the message against the limits in wire.h and fills send_sizes_.
  inline Status MeasureMessageLocked(wire::Direction direction, std::string_view method,
                                     std::span<const ConstSlice> slices);
  inline Status SendEagerPacketLocked(const EagerPacket& eager, std::span<const ConstSlice> slices,
                                      std::string_view method, MessageHeaders& headers);
  // Announces transfers[next...] (addr, rkey, length each), as many as one packet
  // holds; returns how many.
  Result<size_t> SendAnnounceLocked(Call& call, std::span<const RendezvousTransfer> transfers,
                                    size_t next, std::span<const ConstSlice> slices,
                                    std::string_view method, MessageHeaders& headers);
  // Offers one slice for the peer to read: zero-copy when it lies in registered
  // memory, else from a registered staging copy the call keeps.
  Result<wire::RendezvousEntry> OfferSliceLocked(Call& call, const RendezvousTransfer& transfer,
                                                 ConstSlice slice);
  Status SendControlLocked(wire::PacketKind kind, wire::Direction direction, uint64_t call_id,
                           const Status& status);
  // A kCredit packet on a regular credit (kFlagCreditOnRegular).
  Status SendRegularCreditLocked();
  Result<Buffer> NewPacketLocked();
  void StampHeaderLocked(std::byte* packet, bool credit_packet);
  Status PostPacketLocked(Buffer buffer, uint64_t length, bool credit_packet);
  Status FlushPendingLocked();
  // Sends a kCredit packet when half the credits, or half of max_outstanding
  // one-way calls (with `report_every_slot`: any), are owed to the peer.
  void MaybeReturnCreditsLocked(bool report_every_slot = false);

  // Revokes the call's offers, then lets go of the memory they exposed.
  void ReleaseSentLocked(Call& call);
  void Transition(Call& call, wire::CallState to, std::string_view why);
  void CompleteCallLocked(Call& call, Result<Message> result, Callbacks& callbacks);
  // Server: a one-way call's handler is over: nothing is sent; its slot is owed to
  // the client, and an error closes the connection.
  void FinishOnewayLocked(Call& call, const Status& status);
  void FailCallLocked(Call& call, const Status& status, Callbacks& callbacks);
  // Erases the call when nothing references its memory any more.
  void MaybeEraseLocked(uint64_t call_id);
  void OnTimeout(uint64_t call_id);
  void FailLocked(const Status& why);

  const Role role_;
  const std::shared_ptr<fabric::Endpoint> endpoint_;
  RegisteredAllocator& allocator_;
  StatsRecorder& stats_;
  const Geometry geometry_;
  Timer* const timer_;
  const RequestSink on_request_;
  const ClosedSink on_closed_;

  mutable std::mutex mutex_;
  Config config_;
  uint32_t config_epoch_ = 0;
  using CallTable = std::unordered_map<uint64_t, std::unique_ptr<Call>>;
  CallTable calls_;
  // Erased calls' table nodes, each with its Call, reused by the next calls: no
  // allocation per call once as many exist as calls are in flight (bounded by
  // max_outstanding on a client).
  std::vector<CallTable::node_type> spare_calls_;
  // Takes a spare call (or a new one) into calls_ under `id`.
  CallTable::iterator AddCallLocked(uint64_t id);
  // Erases the call at `it`, keeping its node for reuse.
  void EraseCallLocked(CallTable::iterator it);
  uint64_t next_call_id_ = 1;
  // SendMessageLocked's slice sizes, kept so that their room is allocated once per
  // connection, not once per message.
  std::vector<uint64_t> send_sizes_;
  // And the plan made from them, for the same reason.
  MessagePlan send_plan_;
  std::unordered_map<uint64_t, ReadTarget> reads_;
  uint64_t next_read_id_ = 1;
  // The read window (see the header comment).
  uint64_t reading_bytes_ = 0;
  std::deque<WaitingTransfer> waiting_transfers_;
  bool read_watch_armed_ = false;
  uint64_t packets_received_ = 0;
  uint64_t packets_at_idle_check_ = 0;
  // When a call last started or finished (or the connection was made): both
  // ends measure idleness from it, so a client can retire a connection before
  // the server's idle watch could close it under a call (Client::RefreshIfStale).
  std::chrono::steady_clock::time_point last_activity_ = std::chrono::steady_clock::now();
  std::vector<Buffer> recv_buffers_;
  // The received messages' lists and storage blocks (message_recycler.h).
  const std::shared_ptr<internal::MessageRecycler> recycler_;
  // Flow control (see the header comment).
  uint32_t send_credits_ = 0;
  bool spare_available_ = true;
  uint32_t credits_to_return_ = 0;
  bool spare_to_return_ = false;
  std::deque<PendingPacket> pending_;
  // One-way calls (see the header comment). Client: the `done`s of those whose
  // request the server has (eager) or has read (kFin), not yet reported handled,
  // oldest first. Server: how many it handled since its last packet.
  std::deque<CallDone> oneway_sent_;
  uint32_t oneway_to_return_ = 0;
  std::atomic<uint32_t> peer_epoch_{0};
  std::atomic<bool> closed_{false};
  Status close_reason_;
  bool disconnected_ = false;  // kDisconnected delivered: no completion follows
};

}  // namespace artune::transport
