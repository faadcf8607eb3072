// Workloads the sweep (and `artune apply`'s before/after run) replays: a fixed list
// of messages, each a Payload with validated content, sent in order.
//
//   scheme    one TF-gRPC-Bench message (payload.h), e.g. skew over S/M/L buffers;
//   capture   a stored capture's per-method mix and size distribution: messages are
//             apportioned to each method and direction in proportion to its captured
//             message count (largest remainder, so the mix is exact to one
//             message), each size drawn from that method's log2 size histogram
//             (uniform within the bucket, clamped to the captured min and max and to
//             1 B..10 MiB), in a seeded shuffled order; each message's buffer
//             layout rebuilt from the method's captured send iovecs (below).
//
// Buffer layout of a replayed message (the slices it is sent as). The embedded
// transport picks a protocol per slice and packs small slices together, so many
// small slices behave differently from one big buffer. Captures from the ebpf
// (--decode) and preload (with bytes) backends hold, per method and direction, the
// log2 histogram of the send iovecs that carried the method's frames. Those iovecs
// are not all message data: gRPC's sendmsg lists put each HTTP/2 frame header (9 B;
// 14 B with the gRPC length prefix when the frame starts a message) in an iovec of
// its own, beside the HPACK header blocks of HEADERS frames (steady state: 1 to a
// few tens of bytes). In a preload capture of `artune workload` a RecvTensor
// response is 14 B + ~20 B TensorFlow header slice + one tensor iovec, with 2-3 B
// header and trailer blocks per call. The rule:
//   * data iovecs: the buckets whose lower bound is >= kDataIovecFloor (64 B); the
//     buckets below are framing and are dropped. Framing sits far under the floor,
//     header blocks of repeated calls under it too (a connection's first blocks,
//     up to ~200 B, are a handful among thousands of iovecs). The cost: data
//     slices under 64 B (TensorFlow's ~30 B RecvTensor header slice) merge into
//     their neighbour; such slices go eager under every threshold in the table.
//   * pairing: the histograms are marginal (which iovec carried which message is
//     not stored), so it is rebuilt by bytes, largest first: the messages of the
//     largest size bucket take the largest data iovecs no larger than their bucket
//     until those iovecs' bytes cover the messages' bytes (bytes estimated at
//     bucket middles), the next bucket takes from what is left, and so on. A
//     message gRPC sent as one iovec gets that one iovec back; one cut into
//     frame-sized pieces gets those pieces; a bucket left without iovecs (its data
//     was under the floor or all taken) is sent as one buffer. Iovecs left over
//     once every bucket is covered are not used.
//   * split: each message of size S is cut into slices in order, each drawn from
//     the iovecs assigned to its size bucket by their counts (uniform within the
//     bucket) and cut down to what is left of S; a piece from S's own bucket, or
//     one that would leave a tail under the floor, takes the rest. So slices sum to
//     S exactly, none is under the floor unless S itself is (then it is one slice),
//     and at most kMaxReplaySlices (the last allowed slice takes what is left).
//     Every slice is 1 B..10 MiB (the payload's limit, under the transport's).
//   * a method without data iovecs (pcap captures, ebpf without --decode, older
//     captures, or only framing captured): one buffer per message.
//   * the layout draws come from their own seeded stream, so message sizes and
//     order are the same with and without the layout (ReplayOptions::iovec_layout).
// Caveat: gRPC cuts the application's slices at HTTP/2 DATA frame boundaries
// (the peer's max frame size, and flow-control windows), so a large tensor slice
// can be captured as frame-sized pieces; the replay reproduces what gRPC handed to
// the kernel, which can be more fragmented than the application's own slices.
//
// RunReplay sends the list over a held channel with the ack method (the payload
// crosses once, a checksum comes back, as a tensor pulled by a worker does), every
// reply validated: the ack carries a checksum of every received byte in order, so
// each slice's content and position is checked.
//
// Threading: a Workload is immutable after it is built; RunReplay blocks the calling
// thread (completions arrive on transport threads).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/probes/profile.h"
#include "artune/status.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {

// Captured send iovecs below this many bytes are framing, not message data.
inline constexpr uint64_t kDataIovecFloor = 64;
// At most this many slices per replayed message (a 10 MiB message in 16 KiB frame
// pieces is 640; the transport's wire limit is 65536 and a payload's kMaxBuffers).
inline constexpr uint32_t kMaxReplaySlices = 1024;
static_assert(kMaxReplaySlices <= kMaxBuffers);

// How one replayed method's messages were laid out into slices.
struct ReplayLayout {
  bool from_iovecs = false;     // split by captured data iovecs; else one buffer each
  uint64_t data_iovecs = 0;     // captured iovecs at or above kDataIovecFloor
  uint64_t framing_iovecs = 0;  // captured iovecs below it (dropped)
  uint64_t messages = 0;        // of this method in the replay list
  uint64_t slices = 0;          // over those messages
  uint64_t max_slices = 0;      // of one message
  double mean_slices() const {  // per message
    return messages == 0 ? 0 : static_cast<double>(slices) / static_cast<double>(messages);
  }
};

struct Workload {
  std::string description;        // "scheme:skew" | "capture:12" (stored with the sweep)
  std::vector<Payload> messages;  // in call order; at least one
  uint64_t total_bytes = 0;       // sum over messages
  // Per replayed method ("/tf.WorkerService/RecvTensor response"): messages in the list.
  std::map<std::string, uint64_t> mix;
  // Per replayed method (same keys as mix; capture workloads only): the layout.
  std::map<std::string, ReplayLayout> layout;
  // Capture workloads: the calls the captured application kept in flight on a
  // connection, the p50 at call starts (probes::CallConcurrency) of the method with
  // the most sampled calls, and that method; 0 and "" when the capture has no such
  // samples (schemes, captures stored before the probe measured it).
  uint32_t captured_inflight = 0;
  std::string captured_inflight_method;
};

// One line per method of `workload.layout`, for the CLI, e.g.
// "/tf.WorkerService/RecvTensor response: 3.4 slices/message (max 9) from 1200 captured
// data iovecs (2400 framing iovecs under 64 B dropped)" or "...: 1 buffer/message (no
// data iovecs captured)". Empty for a workload without a layout (schemes).
std::vector<std::string> DescribeLayout(const Workload& workload);

// One message of `spec` (ValidateSpec's errors).
Result<Workload> SchemeWorkload(const PayloadSpec& spec);

struct ReplayOptions {
  uint32_t messages = 32;                  // list length (before the byte cap)
  uint64_t max_total_bytes = 64ull << 20;  // the list is shortened to stay under this
  uint64_t seed = 1;
  // Rebuild each message's slices from the captured iovecs (the rule above); false:
  // one buffer per message whatever the capture holds.
  bool iovec_layout = true;
};

// The replay list for a capture's profile. kInvalidArgument when the profile has no
// message with a size (name the capture and say to probe a busier process).
Result<Workload> CaptureWorkload(const probes::Profile& profile, int64_t capture_id,
                                 const ReplayOptions& options);
// Reads capture `capture_id` from the store and builds its replay list.
// kNotFound for an unknown id; kCorruption when the stored profile does not parse.
Result<Workload> LoadCaptureWorkload(db::Store& store, int64_t capture_id,
                                     const ReplayOptions& options);

struct ReplayRunOptions {
  uint32_t inflight = 1;       // 1: one call at a time, every call timed
  uint32_t warmup_rounds = 1;  // passes over the list before measuring
  uint32_t rounds = 2;         // measured passes over the list (at least)
  // Measured passes go on until this much wall time has passed (and `rounds` are
  // done): a pass of a few dozen calls lasts milliseconds, and one that short is at
  // the mercy of a scheduler tick; a measurement of many passes averages those out.
  double min_duration_s = 0;
};

// No measurement runs more passes than this, whatever min_duration_s asks.
inline constexpr uint32_t kMaxReplayPasses = 100000;

// Sends the list `rounds` times (after `warmup_rounds`), and again while the
// measured passes have lasted less than min_duration_s. Each pass ends when all its
// calls have completed. RunResult: passes, rpcs, bytes, duration (wall time of the
// measured passes), per-call latency (with inflight 1, else per-call completion
// time), bandwidth, RPC/s, validation. A mismatch stops the run with validated =
// false; transport errors are returned.
Result<RunResult> RunReplay(BenchChannel& channel, const Workload& workload,
                            const ReplayRunOptions& options);

}  // namespace artune::tuner
