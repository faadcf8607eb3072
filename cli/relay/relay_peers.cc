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
  std::erase_if(retired_peers_, [this](const auto& retired) {
    return last_ping_ - retired.first > kRetiredPeerLife;
  });
  std::vector<std::string> unsent;  // peers whose ping found no call slot
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
      unsent.push_back(address);
    }
  }
  for (auto& retired : retired_peers_) StartWaitingCalls(*retired.second);
  for (const std::string& address : unsent) {
    PingFailedEvent missed{address, Status::Timeout("no call slot free for a ping: all " +
                                                    std::to_string(MaxCallsTo(address)) +
                                                    " calls to it are in flight")};
    Handle(missed);
  }
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
  while (!peer.waiting.empty()) {
    Peer::WaitingCall& call = peer.waiting.front();
    if (!peer.client->TryCallAsync(call.method, call.request, call.options, std::move(call.done))) {
      break;
    }
    peer.waiting.pop_front();
  }
  peer.waiting_count->store(peer.waiting.size());
}

void RelayImpl::Handle(SlotFreedEvent& event) {
  if (auto it = peers_.find(event.address); it != peers_.end()) StartWaitingCalls(*it->second);
}

uint32_t RelayImpl::MaxCallsTo(const std::string& address) const {
  auto it = peers_.find(address);
  return it == peers_.end() ? 0 : it->second->client->config().max_outstanding;
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

Result<std::shared_ptr<Peer>> RelayImpl::PeerFor(const std::string& address) {
  // Target role: this relay's knobs govern what it sends back too (the handshake
  // gives the origin's, since the server's values win): the ones in force now, even
  // when the ping pass has not noticed an apply yet, and also toward an origin that
  // was idle when they changed (FollowLiveConfig tells only busy ones).
  const bool governs = !options_.listen.empty();
  if (governs) FollowLiveConfig();
  auto push = [&](transport::Client& client) {
    if (!governs) return;
    if (Status pushed = PushLiveConfig(client, options_.config); !pushed.ok()) {
      Log("relay: the origin relay " + address + " keeps its own knobs: " + pushed.ToString());
    }
  };
  if (auto it = peers_.find(address); it != peers_.end()) {
    push(*it->second->client);
    return it->second;
  }
  transport::Config config = options_.config;
  ARTUNE_ASSIGN_OR_RETURN(auto client,
                          transport::Client::Connect(config, address, options_.credentials));
  push(*client);
  auto peer = std::make_shared<Peer>();
  peer->address = address;
  peer->client = std::move(client);
  peer->last_heard = std::chrono::steady_clock::now();
  std::lock_guard lock(stats_mutex_);
  peers_[address] = peer;
  return peer;
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
// telling its owner. The push runs off the loop (a control call per origin, which
// may wait for a dead one's deadline); a newer change waits for the previous push.
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
  options_.config = live;
  // Origins carrying connections now; an idle one is told when it opens the next.
  std::vector<std::shared_ptr<Peer>> peers;
  for (const auto& [address, peer] : peers_) {
    if (peer->conns > 0) peers.push_back(peer);
  }
  Log("relay: new knobs from the control plane (" + changed + "), for new messages both ways; " +
      std::to_string(peers.size()) + " origin relay(s) told");
  if (pusher_.joinable()) pusher_.join();
  pusher_ = std::thread([this, live, peers = std::move(peers)] {
    for (const std::shared_ptr<Peer>& peer : peers) {
      if (Status pushed = PushLiveConfig(*peer->client, live); !pushed.ok()) {
        Log("relay: the origin relay " + peer->address +
            " keeps its old knobs: " + pushed.ToString());
      }
    }
  });
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
  Log("relay: the relay at " + event.address + " stopped answering (" + event.why +
      "); resetting its connections");
  std::vector<Conn*> doomed;
  for (auto& [id, conn] : origin_conns_) {
    if (conn->peer == peer) doomed.push_back(conn.get());
  }
  for (auto& [key, conn] : target_conns_) {
    if (conn->peer == peer) doomed.push_back(conn.get());
  }
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

}  // namespace artune::relay
