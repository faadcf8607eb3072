// The relay's peer relays: the transport client of each, their liveness (pings,
// and anything else heard from them), the live knobs pushed to them, and what
// happens when one is given up.
#include <unistd.h>

#include "artune/transport/knobs.h"
#include "relay_impl.h"

namespace artune::relay {
namespace {

// Liveness of a peer relay: a ping every kPingInterval (relay_impl.h; up to
// kMaxPingsInFlight at once), each given kPingTimeout. Anything heard from the
// peer counts: a reply to any call, a request from it. It is given up at once when
// its connection fails, or when a ping times out after kPingsMissedToDrop or more
// have and nothing was heard for kPeerSilence: a relay that hangs is given up 3 to
// 3.25 s after its last word (the program's calls fail then), and one that a loaded
// host, a slow link (a ping behind megabytes of Soft-RoCE reads under TCG) or a
// SIGSTOP holds for two seconds is kept. (Before: one ping unanswered for 750 ms
// dropped a peer, live ones included at load 14-21.) A loop that did not run for
// kLoopGapForgiven (this relay stopped or starved) does not count its own pause as
// its peers' silence.
constexpr auto kPingTimeout = std::chrono::milliseconds(1000);
constexpr int kMaxPingsInFlight = 4;  // kPingTimeout / kPingInterval
constexpr int kPingsMissedToDrop = 2;
constexpr auto kPeerSilence = std::chrono::milliseconds(3000);
constexpr auto kLoopGapForgiven = std::chrono::milliseconds(500);
// How long a dropped peer's client lives on, so the resets just sent to it go out.
constexpr auto kRetiredPeerLife = std::chrono::seconds(3);

}  // namespace

void RelayImpl::PingPeers() {
  last_ping_ = std::chrono::steady_clock::now();
  std::erase_if(retired_peers_, [this](auto& retired) {
    if (last_ping_ - retired.first <= kRetiredPeerLife) return false;
    // Its client's destructor closes connections and joins threads: not on the loop.
    jobs_.Start([gone = std::move(retired.second)] {});
    return true;
  });
  jobs_.JoinFinished();
  std::vector<PingFailedEvent> unsent;  // peers whose ping could not start
  for (auto& [address, peer] : peers_) {
    NoteReplies(*peer);
    // Not watched while it carries nothing: an idle spell is no silence.
    if (peer->conns == 0) peer->last_heard = last_ping_;
    StartWaitingCalls(*peer);
    if (peer->conns == 0 || peer->ping->in_flight.load() >= kMaxPingsInFlight) continue;
    ++peer->ping->in_flight;
    transport::Client::Done pinged = [this, ping = peer->ping,
                                      address](Result<transport::Message> reply) {
      --ping->in_flight;
      if (!reply.ok()) Post(PingFailedEvent{address, reply.status()});
    };
    // A ping never waits behind queued calls: with every call slot taken it counts
    // as missed, so a peer that completes none of them is given up as a silent one.
    if (!peer->waiting.empty() ||
        !peer->client->TryCallAsync(kPingMethod, {}, transport::CallOptions{kPingTimeout},
                                    std::move(pinged))) {
      --peer->ping->in_flight;
      std::string why = "no call slot free for a ping: all " +
                        std::to_string(peer->client->config().max_outstanding) +
                        " calls to it are in flight";
      if (peer->refreshing || peer->client->RefreshDue()) {
        StartRefresh(*peer);
        why = "no ping while a handshake with it is under way";
      }
      unsent.push_back(PingFailedEvent{address, Status::Timeout(why)});
    }
  }
  for (auto& retired : retired_peers_) StartWaitingCalls(*retired.second);
  for (PingFailedEvent& missed : unsent) Handle(missed);
}

void RelayImpl::StartCall(Peer& peer, std::string_view method,
                          std::span<const transport::ConstSlice> request,
                          std::shared_ptr<const void> keep, transport::CallOptions options,
                          transport::Client::Done done) {
  transport::Client::Done wrapped = [this, keep, done = std::move(done),
                                     waiting = peer.waiting_count,
                                     address = peer.address](Result<transport::Message> reply) {
    done(std::move(reply));
    if (waiting->load() > 0) Post(SlotFreedEvent{address});
  };
  if (peer.waiting.empty() &&
      peer.client->TryCallAsync(method, request, options, std::move(wrapped))) {
    return;
  }
  peer.waiting.push_back({method, request, std::move(keep), options, std::move(wrapped)});
  peer.waiting_count->store(peer.waiting.size());
  // A call that completed before the count was stored posted nothing: look again.
  StartWaitingCalls(peer);
}

void RelayImpl::StartWaitingCalls(Peer& peer) {
  while (!peer.waiting.empty() && !peer.refreshing) {
    Peer::WaitingCall& call = peer.waiting.front();
    if (!peer.client->TryCallAsync(call.method, call.request, call.options, std::move(call.done))) {
      // No slot (a completion posts SlotFreedEvent), or a handshake is due first.
      if (peer.client->RefreshDue()) StartRefresh(peer);
      break;
    }
    peer.waiting.pop_front();
  }
  peer.waiting_count->store(peer.waiting.size());
}

void RelayImpl::Handle(SlotFreedEvent& event) {
  if (auto it = peers_.find(event.address); it != peers_.end()) StartWaitingCalls(*it->second);
}

// The handshake of a peer that was reconfigured, lost its data connection or was
// quiet for long: a stopped peer would hold it for the control deadline.
void RelayImpl::StartRefresh(Peer& peer) {
  if (peer.refreshing) return;
  peer.refreshing = true;
  jobs_.Start([this, peer = peer.shared_from_this()] {
    Status refreshed = peer->client->Refresh();
    Post(PeerRefreshedEvent{peer, std::move(refreshed)});
  });
}

void RelayImpl::Handle(PeerRefreshedEvent& event) {
  Peer& peer = *event.peer;
  peer.refreshing = false;
  if (event.status.ok()) {
    peer.last_heard = std::chrono::steady_clock::now();
    peer.pings_missed = 0;
    return StartWaitingCalls(peer);
  }
  auto it = peers_.find(peer.address);
  if (it == peers_.end() || it->second != event.peer) return;  // given up already
  // A timeout counts as a missed ping (a slow peer is kept), any other failure
  // gives it up (PingFailedEvent's rules); the next ping pass tries again.
  PingFailedEvent failed{peer.address, event.status};
  Handle(failed);
}

void RelayImpl::ForgiveOwnPause() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_loop_ > kLoopGapForgiven) {
    for (auto& [address, peer] : peers_) peer->last_heard = now;
  }
  last_loop_ = now;
}

void RelayImpl::NoteReplies(Peer& peer) {
  const uint64_t completed = peer.client->stats().calls_completed;
  if (completed == peer.calls_completed) return;
  peer.calls_completed = completed;
  peer.last_heard = std::chrono::steady_clock::now();
  peer.pings_missed = 0;
}

void RelayImpl::Handle(PingFailedEvent& event) {
  auto it = peers_.find(event.address);
  if (it == peers_.end()) return;
  Peer& peer = *it->second;
  if (event.why.code() != ErrorCode::kTimeout) {
    PeerDeadEvent dead{event.address, event.why.ToString()};
    return Handle(dead);  // its connection failed: it is gone, not slow
  }
  NoteReplies(peer);
  ++peer.pings_missed;
  const auto silence = std::chrono::steady_clock::now() - peer.last_heard;
  // Heard from lately: busy or just resumed, not dead (the ping queued behind data).
  if (peer.pings_missed < kPingsMissedToDrop || silence < kPeerSilence) return;
  const auto silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(silence).count();
  PeerDeadEvent dead{event.address, "nothing heard for " + std::to_string(silent_ms) + " ms, " +
                                        std::to_string(peer.pings_missed) +
                                        " pings unanswered; last: " + event.why.ToString()};
  Handle(dead);
}

void RelayImpl::WithPeer(const std::string& address, PeerReady ready) {
  // Target role: this relay's knobs govern what it sends back too (the handshake
  // gives the origin's, since the server's values win): the ones in force now, even
  // when the ping pass has not noticed an apply yet, and also toward an origin that
  // was idle when they changed (FollowLiveConfig tells only busy ones).
  const bool governs = !options_.listen.empty();
  if (governs) FollowLiveConfig();
  auto it = peers_.find(address);
  std::shared_ptr<Peer> existing = it == peers_.end() ? nullptr : it->second;
  std::vector<PeerReady>& waiters = setups_[address];
  if (waiters.empty() && existing && !(governs && KnobsBehind(*existing->client))) {
    setups_.erase(address);
    return ready(existing);
  }
  waiters.push_back(std::move(ready));
  if (waiters.size() > 1) return;  // its setup job runs already
  // The dial (a handshake) and the push (a control call) wait on the peer: a
  // stopped one would hold them for the control deadline, so a job does them.
  jobs_.Start([this, address, existing, governs, config = options_.config,
               credentials = options_.credentials] {
    PeerSetUpEvent event{address, existing};
    transport::Client* client = existing ? existing->client.get() : nullptr;
    if (!existing) {
      event.dialed = transport::Client::Connect(config, address, credentials);
      if (event.dialed.ok()) client = event.dialed->get();
    }
    if (client != nullptr && governs) event.pushed = PushLiveConfig(*client, config);
    Post(std::move(event));
  });
}

bool RelayImpl::KnobsBehind(const transport::Client& client) const {
  const transport::Config agreed = client.config();
  for (const transport::Knob& knob : transport::Knobs()) {
    if (knob.live && knob.get(agreed) != knob.get(options_.config)) return true;
  }
  return false;
}

void RelayImpl::Handle(PeerSetUpEvent& event) {
  auto waiting = setups_.extract(event.address);
  if (!event.pushed.ok()) {
    Log("relay: the origin relay " + event.address +
        " keeps its own knobs: " + event.pushed.ToString());
  }
  Result<std::shared_ptr<Peer>> ready = Status::Unavailable("relay: not set up");
  if (event.existing) {
    auto it = peers_.find(event.address);
    if (it != peers_.end() && it->second == event.existing) {
      ready = event.existing;
    } else {
      ready = Status::Unavailable("relay: the relay at " + event.address +
                                  " was given up while its knobs were pushed");
    }
  } else if (!event.dialed.ok()) {
    ready = event.dialed.status();
  } else {
    auto peer = std::make_shared<Peer>();
    peer->address = event.address;
    peer->client = std::move(*event.dialed);
    peer->last_heard = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(stats_mutex_);
      peers_[event.address] = peer;
    }
    ready = std::move(peer);
  }
  if (waiting.empty()) return;
  for (PeerReady& waiter : waiting.mapped()) waiter(ready);
}

Status RelayImpl::PushLiveConfig(transport::Client& client, const transport::Config& config) {
  const transport::Config agreed = client.config();
  transport::Config wanted = agreed;
  for (const transport::Knob& knob : transport::Knobs()) {
    if (knob.live) knob.set(wanted, knob.get(config));
  }
  if (transport::ConfigToMap(wanted) == transport::ConfigToMap(agreed)) return Status::Ok();
  return client.Reconfigure(wanted);
}

// Polled with the pings: the control plane changes the server's config without
// telling its owner. The pushes run off the loop (WithPeer's setup jobs: a control
// call per origin, which may wait for a dead one's deadline).
void RelayImpl::FollowLiveConfig() {
  if (options_.listen.empty()) return;
  auto server = servers_.find(HostOf(options_.listen));
  if (server == servers_.end()) return;
  const transport::Config live = server->second->config();
  const auto before = transport::ConfigToMap(options_.config);
  const auto after = transport::ConfigToMap(live);
  if (before == after) return;
  std::string changed;
  for (const auto& [name, value] : after) {
    if (before.at(name) != value) changed += (changed.empty() ? "" : ", ") + name + "=" + value;
  }
  // Before the pushes: WithPeer calls this again, and must find nothing new.
  options_.config = live;
  // Origins carrying connections now; an idle one is told when it opens the next.
  std::vector<std::string> busy;
  for (const auto& [address, peer] : peers_) {
    if (peer->conns > 0) busy.push_back(address);
  }
  Log("relay: new knobs from the control plane (" + changed + "), for new messages both ways; " +
      std::to_string(busy.size()) + " origin relay(s) told");
  for (const std::string& address : busy) WithPeer(address, [](Result<std::shared_ptr<Peer>>) {});
}

void RelayImpl::DropPeer(const std::string& address) {
  std::lock_guard lock(stats_mutex_);
  auto it = peers_.find(address);
  if (it == peers_.end()) return;
  AddStats(dropped_stats_, it->second->client->stats());
  retired_peers_.emplace_back(std::chrono::steady_clock::now(), std::move(it->second));
  peers_.erase(it);
}

// The address of this host that `host` reaches us by, and a server there for the
// return path (loopback needs no token; any other address does).
void RelayImpl::Handle(PeerDeadEvent& event) {
  auto it = peers_.find(event.address);
  if (it == peers_.end()) return;
  std::shared_ptr<Peer> peer = it->second;
  std::vector<Conn*> doomed;
  for (auto& [id, conn] : origin_conns_) {
    if (conn->peer == peer) doomed.push_back(conn.get());
  }
  for (auto& [key, conn] : target_conns_) {
    if (conn->peer == peer) doomed.push_back(conn.get());
  }
  Log("relay: the relay at " + event.address + " stopped answering (" + event.why +
      "); resetting its " + std::to_string(doomed.size()) + " connection(s)");
  // Each reset is also sent to the peer: one that was only slow (a loaded host, a
  // stopped process) learns that its side of the connection is gone, instead of
  // leaving its program waiting on a connection nobody carries any more.
  for (Conn* conn : doomed) CloseConn(*conn, true, true);
  // Listeners toward it go too: the next connect asks again.
  for (auto listener = listeners_.begin(); listener != listeners_.end();) {
    if (listener->second.peer == peer) {
      listener_by_dst_.erase({listener->second.host, listener->second.dst_port});
      close(listener->first);
      listener = listeners_.erase(listener);
    } else {
      ++listener;
    }
  }
  DropPeer(event.address);
}

void BackgroundJobs::Start(std::function<void()> job) {
  auto over = std::make_shared<std::atomic<bool>>(false);
  // The job (and what it owns, a Peer being let go) ends before `over` is set, so
  // JoinFinished never waits for a destructor.
  std::thread thread([job = std::move(job), over]() mutable {
    job();
    job = nullptr;
    over->store(true);
  });
  jobs_.push_back({std::move(thread), std::move(over)});
}

void BackgroundJobs::JoinFinished() {
  std::erase_if(jobs_, [](Job& job) {
    if (!job.over->load()) return false;
    job.thread.join();
    return true;
  });
}

void BackgroundJobs::JoinAll() {
  for (Job& job : jobs_) job.thread.join();
  jobs_.clear();
}

}  // namespace artune::relay
