// A carried connection's socket: reading into Data calls within the send window,
// writing what the peer sent in sequence order, half-close and reset.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "relay_impl.h"

namespace artune::relay {
namespace {

// Bytes read from a socket into one Data call at most: a tensor of a few MiB goes
// as one or two payload slices (rendezvous, chunked past chunk_size).
constexpr size_t kMaxChunk = 4u << 20;
// A read of at least this much sends its large messages (one run of at least
// kInPlaceMinBytes: gRPC sends a message as one DATA frame, up to 16 MiB) from the
// read buffer itself, which then goes with the call: no copy, and the registered
// memory a connection holds stays under twice the bytes its calls have in flight.
// Smaller reads (small calls) are gathered, and the buffer is read into again.
constexpr size_t kInPlaceMinRead = kMaxChunk / 2;
constexpr size_t kInPlaceMinBytes = 64u << 10;

Toward Other(Toward self) { return self == Toward::kOrigin ? Toward::kTarget : Toward::kOrigin; }

}  // namespace

Conn* RelayImpl::FindConn(Toward self, uint64_t session, uint64_t conn) {
  if (self == Toward::kOrigin) {
    if (session != session_) return nullptr;
    auto it = origin_conns_.find(conn);
    return it == origin_conns_.end() ? nullptr : it->second.get();
  }
  auto it = target_conns_.find({session, conn});
  return it == target_conns_.end() ? nullptr : it->second.get();
}

std::string RelayImpl::ConnName(const Conn& conn) {
  char session[17];
  std::snprintf(session, sizeof session, "%016llx", static_cast<unsigned long long>(conn.session));
  return "connection " + std::to_string(conn.id) + " of session " + session;
}

Conn& RelayImpl::AddConn(std::unique_ptr<Conn> conn) {
  Conn& added = *conn;
  ++added.peer->conns;
  connections_.fetch_add(1);
  if (added.fd >= 0) conn_by_fd_[added.fd] = &added;
  if (added.self == Toward::kOrigin) {
    origin_conns_[added.id] = std::move(conn);
  } else {
    target_conns_[{added.session, added.id}] = std::move(conn);
  }
  return added;
}

void RelayImpl::UpdateInterest(Conn& conn) {
  if (conn.fd < 0) return;
  uint32_t want = 0;
  if (conn.connecting) {
    want = EPOLLOUT;
  } else {
    if (!conn.read_closed && conn.sent - conn.acked < options_.window) want |= EPOLLIN;
    // While a Data handler writes, the loop does not (it would wake for nothing).
    if (!conn.out.empty() && !conn.handler_writing) want |= EPOLLOUT;
  }
  if (want == conn.events) return;
  epoll_event event{};
  event.events = want;
  event.data.fd = conn.fd;
  epoll_ctl(epoll_fd_, conn.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, conn.fd, &event);
  if (want == 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn.fd, nullptr);
  conn.events = want;
}

void RelayImpl::OnConnEvents(Conn& conn, uint32_t events) {
  if (conn.connecting) {
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(conn.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      Log("relay: cannot connect to the server: " + std::string(std::strerror(error)));
      return CloseConn(conn, true, true);
    }
    conn.connecting = false;
    WriteSocket(conn);  // what arrived meanwhile
    return;
  }
  const uint64_t id = conn.id, session = conn.session;
  const Toward self = conn.self;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadSocket(conn);
  Conn* still = FindConn(self, session, id);
  if (still != nullptr && (events & EPOLLOUT)) WriteSocket(*still);
}

void RelayImpl::ReadSocket(Conn& conn) {
  if (conn.read_closed) return UpdateInterest(conn);
  const uint64_t credit = options_.window - std::min(options_.window, conn.sent - conn.acked);
  // One buffer per peer relay (only this thread reads sockets), registered with its
  // client and never zero-filled: BuildChunk copies out of it before the next read,
  // or sends from it in place and takes it (then the next read gets a fresh one).
  Peer& peer = *conn.peer;
  if (!peer.read_buffer) {
    if (auto fresh = peer.client->allocator().Allocate(kMaxChunk); fresh.ok()) {
      peer.read_buffer = std::move(*fresh);
    }
  }
  if (!peer.read_buffer && !read_buffer_) read_buffer_.reset(new std::byte[kMaxChunk]);
  std::byte* const into = peer.read_buffer ? peer.read_buffer.data() : read_buffer_.get();
  const size_t limit = std::min<uint64_t>(kMaxChunk, credit);
  size_t have = 0;
  uint8_t flags = 0;
  while (have < limit) {
    const size_t asked = limit - have;
    const ssize_t got = recv(conn.fd, into + have, asked, MSG_DONTWAIT);
    if (got > 0) {
      have += static_cast<size_t>(got);
      // A short read emptied the socket: asking again would only say EAGAIN (epoll
      // is level-triggered, so what arrives later, or the end, wakes us again).
      if (static_cast<size_t>(got) < asked) break;
      continue;
    }
    if (got == 0) {
      flags = kFlagFin;
    } else if (errno == EINTR) {
      continue;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      flags = kFlagReset;
    }
    break;
  }
  if (have == 0 && flags == 0) return UpdateInterest(conn);
  const std::span<const std::byte> bytes(into, have);
  std::vector<ByteRun> runs;
  conn.splitter.Feed(bytes, runs);
  SendData(conn, bytes, runs, flags, peer.read_buffer ? &peer.read_buffer : nullptr);
  if (flags == kFlagReset) return CloseConn(conn, true, false);
  if (flags == kFlagFin) {
    conn.read_closed = true;
    MaybeFinish(conn);
    return;
  }
  UpdateInterest(conn);
}

void RelayImpl::SendData(Conn& conn, std::span<const std::byte> bytes,
                         const std::vector<ByteRun>& runs, uint8_t flags,
                         transport::Buffer* source) {
  DataHeader header{Other(conn.self), flags, conn.session, conn.id, conn.next_seq++};
  const size_t in_place_min =
      source != nullptr && bytes.size() >= kInPlaceMinRead ? kInPlaceMinBytes : 0;
  auto chunk = BuildChunk(header, bytes, runs, conn.peer->client->allocator(), in_place_min);
  if (!chunk.ok()) {
    Log("relay: " + chunk.status().ToString());
    return;
  }
  if (chunk->in_place) chunk->source = std::move(*source);
  conn.sent += bytes.size();
  bytes_.fetch_add(bytes.size());
  auto owned = std::make_shared<Chunk>(std::move(*chunk));
  const Toward self = conn.self;
  const uint64_t session = conn.session, id = conn.id;
  // One-way: the far relay sends nothing back per chunk (a response would wake
  // this relay's client thread only to say the bytes arrived; Ack is the send
  // credit). A failure shows as the connection to the peer failing.
  StartCall(*conn.peer, kDataMethod, owned->slices, owned, transport::CallOptions{.one_way = true},
            [this, self, session, id](Result<transport::Message> reply) {
              if (!reply.ok()) Post(ConnFailedEvent{self, session, id, reply.status().ToString()});
            });
}

void RelayImpl::SendAck(Conn& conn) {
  conn.ack_sent = conn.written;
  auto message = std::make_shared<OneSlice>(
      EncodeAck({Other(conn.self), conn.session, conn.id, conn.written}));
  const Toward self = conn.self;
  const uint64_t session = conn.session, id = conn.id;
  StartCall(*conn.peer, kAckMethod, message->request(), message,
            transport::CallOptions{.one_way = true},
            [this, self, session, id](Result<transport::Message> reply) {
              if (!reply.ok()) Post(ConnFailedEvent{self, session, id, reply.status().ToString()});
            });
}

void RelayImpl::Deliver(Conn& conn, HeldChunk chunk) {
  if (chunk.header.seq < conn.expect_seq || conn.reorder.contains(chunk.header.seq)) return;
  conn.reorder.emplace(chunk.header.seq, std::move(chunk));
  while (!conn.reorder.empty() && conn.reorder.begin()->first == conn.expect_seq) {
    HeldChunk next = std::move(conn.reorder.begin()->second);
    conn.reorder.erase(conn.reorder.begin());
    ++conn.expect_seq;
    bytes_.fetch_add(next.bytes.size());
    conn.out.PushHeld(std::move(next.bytes));
    if (next.header.flags & kFlagReset) {
      // Said on both ends: a program's call that fails at once is then traced to the
      // relay that gave up the connection, and that relay's own line says why.
      Log("relay: the relay at " + conn.peer->address + " reset a carried connection (" +
          ConnName(conn) + ")");
      return CloseConn(conn, true, false);
    }
    if (next.header.flags & kFlagFin) conn.fin_pending = true;
  }
  if (!conn.connecting) WriteSocket(conn);
}

bool RelayImpl::FlushOut(Conn& conn) {
  while (!conn.out.empty()) {
    // Everything queued, in order, in one call.
    iovec pieces[WriteQueue::kMaxPieces];
    msghdr message{};
    message.msg_iov = pieces;
    message.msg_iovlen = conn.out.Gather(pieces);
    const ssize_t wrote = sendmsg(conn.fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    conn.written += static_cast<uint64_t>(wrote);
    conn.out.Consume(static_cast<size_t>(wrote));
  }
  return true;
}

HeldBytes RelayImpl::Keep(const ChunkView& chunk, const transport::Message& request, size_t skip) {
  if (skip >= chunk.bytes) return {};
  queued_bytes_.fetch_add(chunk.bytes - skip);
  // What Message::Share says the hold pins: blocks of power-of-two classes.
  const uint64_t charge = 2 * request.total_bytes() + 256 * uint64_t{request.slice_count()};
  if (held_->fetch_add(charge) + charge <= options_.held_limit) {
    HeldBytes held;
    held.pieces = PiecesFrom(chunk, skip);
    held.keep = std::make_shared<const HeldRequest>(request.Share(), held_, charge);
    return held;
  }
  held_->fetch_sub(charge);
  copied_bytes_.fetch_add(chunk.bytes - skip);
  return HeldBytes::Own(CopyFrom(chunk, skip));
}

bool RelayImpl::TryWriteNow(const ChunkView& chunk, const transport::Message& request) {
  // Never on the loop's own thread (it holds the lock; a transport that ran a
  // handler inline in CallAsync would get here).
  if (loop_thread_of == this) return false;
  Conn* conn = nullptr;
  int fd = -1;
  {
    std::unique_lock state(state_mutex_, std::try_to_lock);
    if (!state.owns_lock() || stopping_.load()) return false;
    const DataHeader& header = chunk.header;
    conn = FindConn(header.toward, header.session, header.conn);
    // Only the plain case: the next chunk in order, no end or reset, socket open,
    // no other handler writing it.
    if (conn == nullptr || conn->connecting || conn->write_closed || conn->handler_writing ||
        header.flags != 0 || header.seq != conn->expect_seq || !conn->reorder.empty()) {
      return false;
    }
    ++conn->expect_seq;
    if (conn->peer) conn->peer->last_heard = std::chrono::steady_clock::now();  // a word from it
    bytes_.fetch_add(chunk.bytes);
    if (!conn->out.empty()) {
      // Behind queued bytes: all of it joins the queue, flushed here under the lock.
      conn->out.PushHeld(Keep(chunk, request, 0));
      AfterHandlerWrite(*conn, FlushOut(*conn));
      return true;
    }
    conn->handler_writing = true;
    fd = conn->fd;
  }
  // Straight from the transport's memory while the socket takes it, without the
  // lock; what it does not take now waits in the queue, in the same memory (held
  // past this handler's return) while held_limit allows.
  size_t taken = 0;
  const bool healthy = SendPieces(fd, chunk.pieces, taken);
  HeldBytes rest = Keep(chunk, request, taken);
  std::unique_lock state(state_mutex_, std::try_to_lock);
  if (state.owns_lock()) {
    FinishHandlerWrite(*conn, taken, std::move(rest), healthy, false);
  } else {  // the loop runs (or the relay stops): it finishes, no wait here
    Post(HandlerWroteEvent{conn, taken, std::move(rest), healthy});
  }
  return true;
}

void RelayImpl::FinishHandlerWrite(Conn& conn, size_t taken, HeldBytes rest, bool healthy,
                                   bool on_loop) {
  conn.handler_writing = false;
  conn.written += taken;
  conn.out.PushHeldFront(std::move(rest));  // before what was queued meanwhile
  if (conn.close_after_write.has_value()) {
    CloseSocket(conn, *conn.close_after_write);
    closing_conns_.erase(&conn);  // `conn` is gone
    return;
  }
  if (on_loop) {
    if (!healthy) return CloseConn(conn, true, true);  // reset the other end
    return WriteSocket(conn);
  }
  if (healthy) healthy = FlushOut(conn);  // what the loop queued meanwhile
  AfterHandlerWrite(conn, healthy);
}

void RelayImpl::Handle(HandlerWroteEvent& event) {
  FinishHandlerWrite(*event.conn, event.taken, std::move(event.rest), event.healthy, true);
}

void RelayImpl::AfterHandlerWrite(Conn& conn, bool healthy) {
  // Acks, ends and resets are transport calls, which may wait for a slot: the loop's.
  if (!healthy || conn.written - conn.ack_sent >= options_.window / 4 ||
      (conn.fin_pending && conn.out.empty())) {
    Post(WriteEvent{conn.self, conn.session, conn.id});
  } else {
    UpdateInterest(conn);
  }
}

void RelayImpl::WriteSocket(Conn& conn) {
  // A Data handler writes it now; FinishHandlerWrite comes back here (or posts).
  if (conn.handler_writing) return UpdateInterest(conn);
  if (!FlushOut(conn)) return CloseConn(conn, true, true);  // reset the other end
  // Credit back to the sender after each quarter window written: a sender out of
  // credit has a whole window unacknowledged, so it always gets one.
  if (conn.written - conn.ack_sent >= options_.window / 4) {
    SendAck(conn);
  }
  if (conn.out.empty() && conn.fin_pending && !conn.write_closed) {
    shutdown(conn.fd, SHUT_WR);
    conn.write_closed = true;
    return MaybeFinish(conn);
  }
  UpdateInterest(conn);
}

void RelayImpl::MaybeFinish(Conn& conn) {
  if (conn.read_closed && conn.write_closed) return CloseConn(conn, false, false);
  UpdateInterest(conn);
}

void RelayImpl::CloseConn(Conn& conn, bool reset, bool tell_peer) {
  if (tell_peer && conn.peer) {
    SendData(conn, {}, {}, kFlagReset);
  }
  if (conn.peer) --conn.peer->conns;
  std::unique_ptr<Conn> owned;
  if (conn.self == Toward::kOrigin) {
    owned = std::move(origin_conns_[conn.id]);
    origin_conns_.erase(conn.id);
  } else {
    owned = std::move(target_conns_[{conn.session, conn.id}]);
    target_conns_.erase({conn.session, conn.id});
  }
  if (conn.fd >= 0) conn_by_fd_.erase(conn.fd);
  if (conn.handler_writing) {
    // The socket stays open (its number never reused under the handler's write)
    // until FinishHandlerWrite, but out of the epoll set from now on.
    if (conn.fd >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn.fd, nullptr);
    conn.events = 0;
    conn.close_after_write = reset;
    closing_conns_[&conn] = std::move(owned);
    return;
  }
  CloseSocket(conn, reset);
}

void RelayImpl::CloseSocket(Conn& conn, bool reset) {
  if (conn.fd < 0) return;
  if (reset) {
    linger hard{1, 0};  // close sends RST: the program sees a reset, not an end
    setsockopt(conn.fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  }
  close(conn.fd);  // also leaves the epoll set
  conn.fd = -1;
}

}  // namespace artune::relay
