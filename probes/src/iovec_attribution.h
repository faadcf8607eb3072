// Attributes the iovecs of send calls to the gRPC method whose HTTP/2 frame each
// one carried, for one direction of one connection (ProbeSession keeps two per
// connection). Internal to probes/.
//
// Both inputs are positions in the direction's byte stream, counted from its
// first byte: send calls advance a cursor by the bytes they transferred (the
// iovecs past a partial transfer were not sent and are not attributed; a later
// call sends them again), and the decoder reports each frame's [begin, end). An
// iovec belongs to the frame holding its first byte. The two arrive in either
// order (the decoder may run on the receiver's copy of the bytes, before or after
// the sender's call is reported), so both wait in bounded queues until matched.
//
// Not thread-safe (the backend's run thread).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>

namespace artune::probes {

class IovecAttribution {
 public:
  // Called for each iovec once it is decided: `method_index` is the caller's
  // index for the frame's method, or -1 when none (connection frame, unknown
  // method, bytes never framed).
  using Decided = std::function<void(int method_index, uint32_t length)>;

  // At most this many iovecs and frames wait; past it the oldest iovec is decided
  // as unattributed (its bytes were never decoded), the oldest frame dropped.
  static constexpr size_t kMaxPending = 4096;

  explicit IovecAttribution(Decided decided) : decided_(std::move(decided)) {}

  // A send call that transferred `transferred` bytes (> 0) with these iovecs.
  void AddSend(std::span<const uint32_t> iovec_lengths, uint64_t transferred);
  // A complete frame of this direction; frames come in stream order. Frames that
  // end before every send seen so far can match nothing and are not kept.
  void AddFrame(uint64_t begin, uint64_t end, int method_index);
  // The direction ended (or lost its positions for good): what waits is decided
  // as unattributed.
  void Flush();

 private:
  struct PendingIovec {
    uint64_t begin;
    uint32_t length;
  };
  struct Frame {
    uint64_t begin;
    uint64_t end;
    int method_index;
  };
  void Match();

  Decided decided_;
  uint64_t send_cursor_ = 0;
  std::deque<PendingIovec> iovecs_;
  std::deque<Frame> frames_;
};

}  // namespace artune::probes
