// Workloads the sweep (and `artune apply`'s before/after run) replays: a fixed list
// of messages, each a Payload with validated content, sent in order.
//
//   scheme    one TF-gRPC-Bench message (payload.h), e.g. skew over S/M/L buffers;
//   capture   a stored capture's per-method mix and size distribution: messages are
//             apportioned to each method and direction in proportion to its captured
//             message count (largest remainder, so the mix is exact to one
//             message), each size drawn from that method's log2 size histogram
//             (uniform within the bucket, clamped to the captured min and max and to
//             1 B..10 MiB), in a seeded shuffled order. One buffer per message.
//
// RunReplay sends the list over a held channel with the ack method (the payload
// crosses once, a checksum comes back, as a tensor pulled by a worker does), every
// reply validated.
//
// Threading: a Workload is immutable after it is built; RunReplay blocks the calling
// thread (completions arrive on transport threads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/probes/profile.h"
#include "artune/status.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {

struct Workload {
  std::string description;        // "scheme:skew" | "capture:12" (stored with the sweep)
  std::vector<Payload> messages;  // in call order; at least one
  uint64_t total_bytes = 0;       // sum over messages
  // Per replayed method ("/tf.WorkerService/RecvTensor response"): messages in the list.
  std::map<std::string, uint64_t> mix;
};

// One message of `spec` (ValidateSpec's errors).
Result<Workload> SchemeWorkload(const PayloadSpec& spec);

struct ReplayOptions {
  uint32_t messages = 32;                  // list length (before the byte cap)
  uint64_t max_total_bytes = 64ull << 20;  // the list is shortened to stay under this
  uint64_t seed = 1;
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
  uint32_t rounds = 2;         // measured passes over the list
};

// Sends the list `rounds` times (after `warmup_rounds`). RunResult: rpcs, bytes,
// duration (wall time of the measured rounds), per-call latency (with inflight 1,
// else per-call completion time), bandwidth, RPC/s, validation. A mismatch stops
// the run with validated = false; transport errors are returned.
Result<RunResult> RunReplay(BenchChannel& channel, const Workload& workload,
                            const ReplayRunOptions& options);

}  // namespace artune::tuner
