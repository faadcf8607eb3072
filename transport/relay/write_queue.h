// The bytes a carried connection still has to write to its socket: pieces of the
// requests they arrived in (held with Message::Share, no copy) or of copies, as
// they came from the peer, handed to the kernel several at a time (one sendmsg for
// all the frames of a small call) and consumed exactly as far as the kernel took
// them. Each piece's memory lives until the last piece it keeps is consumed.
// Under the relay's state lock, like the Conn that holds it.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <deque>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace artune::relay {

// Bytes to write, in order, and what keeps them valid: `keep` owns the memory
// every piece points into (a held request, or a copy).
struct HeldBytes {
  std::vector<std::span<const std::byte>> pieces;
  std::shared_ptr<const void> keep;

  size_t size() const {
    size_t total = 0;
    for (const auto& piece : pieces) total += piece.size();
    return total;
  }
  // A copy the pieces' owner is: `bytes` itself, as one piece.
  static HeldBytes Own(std::vector<std::byte> bytes) {
    HeldBytes held;
    if (bytes.empty()) return held;
    auto owned = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
    held.pieces.emplace_back(owned->data(), owned->size());
    held.keep = std::move(owned);
    return held;
  }
};

class WriteQueue {
 public:
  // Pieces handed to one Gather() at most (well under IOV_MAX).
  static constexpr size_t kMaxPieces = 64;

  bool empty() const { return pieces_.empty(); }
  // Bytes queued and not yet consumed.
  size_t bytes() const { return bytes_; }

  // Appends `held`'s pieces after everything queued; empty pieces are dropped.
  void PushHeld(HeldBytes held) {
    for (const auto& bytes : held.pieces) {
      if (bytes.empty()) continue;
      bytes_ += bytes.size();
      pieces_.push_back({bytes, held.keep});
    }
  }
  void Push(std::vector<std::byte> buffer) { PushHeld(HeldBytes::Own(std::move(buffer))); }

  // Puts `held`'s pieces, in their order, before everything queued (what a Data
  // handler's own write left, ahead of what arrived meanwhile).
  void PushHeldFront(HeldBytes held) {
    for (auto it = held.pieces.rbegin(); it != held.pieces.rend(); ++it) {
      if (it->empty()) continue;
      bytes_ += it->size();
      pieces_.push_front({*it, held.keep});
    }
  }
  void PushFront(std::vector<std::byte> buffer) {
    PushHeldFront(HeldBytes::Own(std::move(buffer)));
  }

  // Fills `pieces` with the unconsumed bytes in order, the first piece from where
  // the last Consume stopped; returns how many it filled (0 when empty).
  size_t Gather(std::span<iovec, kMaxPieces> pieces) const {
    size_t count = 0;
    for (auto it = pieces_.begin(); it != pieces_.end() && count < pieces.size(); ++it) {
      pieces[count++] = {const_cast<std::byte*>(it->bytes.data()), it->bytes.size()};
    }
    return count;
  }

  // The kernel took `count` bytes of what Gather gave (count <= bytes()).
  void Consume(size_t count) {
    bytes_ -= count;
    while (count > 0) {
      Piece& front = pieces_.front();
      if (count < front.bytes.size()) {
        front.bytes = front.bytes.subspan(count);
        return;
      }
      count -= front.bytes.size();
      pieces_.pop_front();  // the last piece of a held request gives its memory back
    }
  }

 private:
  struct Piece {
    std::span<const std::byte> bytes;  // what is left of it to write
    std::shared_ptr<const void> keep;
  };
  std::deque<Piece> pieces_;
  size_t bytes_ = 0;
};

// Hands `pieces` (in order) to the stream socket `fd` without copying them, until
// they are gone or the socket is full; `taken` is set to the bytes the kernel took
// (a prefix of the pieces' concatenation). False when the socket failed (errno
// says why); a full socket is no failure. Any thread that owns `fd`'s writes.
inline bool SendPieces(int fd, std::span<const std::span<const std::byte>> pieces, size_t& taken) {
  constexpr size_t kBatch = 256;  // iovecs per sendmsg (well under IOV_MAX)
  taken = 0;
  for (size_t next = 0; next < pieces.size();) {
    iovec batch[kBatch];
    size_t count = 0, offered = 0;
    for (; next < pieces.size() && count < kBatch; ++next) {
      if (pieces[next].empty()) continue;
      batch[count++] = {const_cast<std::byte*>(pieces[next].data()), pieces[next].size()};
      offered += pieces[next].size();
    }
    if (count == 0) break;
    msghdr message{};
    message.msg_iov = batch;
    message.msg_iovlen = count;
    ssize_t wrote = -1;
    do {
      wrote = sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (wrote < 0 && errno == EINTR);
    if (wrote < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    taken += static_cast<size_t>(wrote);
    // Short: the socket is full, and the rest of this batch and the next wait.
    if (static_cast<size_t>(wrote) < offered) return true;
  }
  return true;
}

}  // namespace artune::relay
