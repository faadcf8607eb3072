// The bytes a carried connection still has to write to its socket: whole buffers
// as they arrived from the peer, handed to the kernel several at a time (one
// sendmsg for all the frames of a small call) and consumed exactly as far as the
// kernel took them. Under the relay's state lock, like the Conn that holds it.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <deque>
#include <span>
#include <vector>

namespace artune::relay {

class WriteQueue {
 public:
  // Buffers handed to one Gather() at most (well under IOV_MAX).
  static constexpr size_t kMaxPieces = 64;

  bool empty() const { return buffers_.empty(); }
  // Bytes queued and not yet consumed.
  size_t bytes() const { return bytes_; }

  // Appends `buffer` after everything queued; an empty one is dropped.
  void Push(std::vector<std::byte> buffer) {
    if (buffer.empty()) return;
    bytes_ += buffer.size();
    buffers_.push_back(std::move(buffer));
  }

  // Puts `buffer` before everything queued (what a Data handler's own write left,
  // ahead of what arrived meanwhile); an empty one is dropped.
  void PushFront(std::vector<std::byte> buffer) {
    if (buffer.empty()) return;
    if (front_offset_ > 0) {  // the old front's consumed bytes are out already: drop them
      std::vector<std::byte>& front = buffers_.front();
      front.erase(front.begin(), front.begin() + static_cast<std::ptrdiff_t>(front_offset_));
      front_offset_ = 0;
    }
    bytes_ += buffer.size();
    buffers_.push_front(std::move(buffer));
  }

  // Fills `pieces` with the unconsumed bytes in order, the first buffer from where
  // the last Consume stopped; returns how many it filled (0 when empty).
  size_t Gather(std::span<iovec, kMaxPieces> pieces) const {
    size_t count = 0;
    for (auto it = buffers_.begin(); it != buffers_.end() && count < pieces.size(); ++it) {
      const size_t skip = count == 0 ? front_offset_ : 0;
      pieces[count++] = {const_cast<std::byte*>(it->data()) + skip, it->size() - skip};
    }
    return count;
  }

  // The kernel took `count` bytes of what Gather gave (count <= bytes()).
  void Consume(size_t count) {
    bytes_ -= count;
    while (count > 0) {
      const size_t rest = buffers_.front().size() - front_offset_;
      if (count < rest) {
        front_offset_ += count;
        return;
      }
      count -= rest;
      buffers_.pop_front();
      front_offset_ = 0;
    }
  }

 private:
  std::deque<std::vector<std::byte>> buffers_;
  size_t front_offset_ = 0;
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
