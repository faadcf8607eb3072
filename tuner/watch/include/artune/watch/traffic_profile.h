// The size profile of a running application's messages, read from the counters of
// the transport servers that carry them (`artune relay`, `artune serve`) over their
// control plane instead of a probe: how many messages fell in each log2 size bucket
// between two GetStats readings, over every protocol. `artune watch` compares the
// profile of each window with the one the config in force was chosen for, and
// replays a drifted one to predict and to measure.
//
// Threading: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "artune/status.h"
#include "artune/transport/protocol.h"
#include "artune/transport/transport.h"
#include "artune/tuner/workload.h"

namespace artune::watch {

struct TrafficProfile {
  // Messages (the transport's slices) by transport::Log2Bucket of their size.
  std::array<uint64_t, transport::kLog2BucketCount> messages{};
  uint64_t total = 0;  // the sum of `messages`

  TrafficProfile& operator+=(const TrafficProfile& other);
};

// Every server's counters added up (a watcher reads one reading per server).
transport::Stats SumStats(std::span<const transport::Stats> readings);

// What the counters grew by from `before` to `after`. Counters only grow; a reading
// with fewer messages than the one before means the server restarted in between,
// and then `after` alone is the window (what it has counted since).
TrafficProfile ProfileBetween(const transport::Stats& before, const transport::Stats& after);

// The size a bucket's messages stand for: the middle of [2^b, 2^(b+1)) (bucket 0
// holds 0 and 1 B: 1).
uint64_t BucketMiddle(int bucket);

// How far two profiles' mixes are apart: the total variation distance between their
// byte shares per bucket (bucket middles as sizes), 0 for the same mix and 1 for
// disjoint ones. Weighted by bytes because a handful of large tensors costs what
// thousands of small messages do. 0 when either profile is empty.
double Drift(const TrafficProfile& a, const TrafficProfile& b);

// A replay list with the profile's mix: `messages` messages apportioned to the
// buckets by their counts (largest remainder), each one buffer of its bucket's
// middle size (at most 10 MiB, the payload's limit), in a seeded shuffled order;
// fewer messages when the list would pass `max_total_bytes` (never fewer than one).
// description "traffic:N" with N the profile's total. kInvalidArgument for an empty
// profile or zero messages.
Result<tuner::Workload> WorkloadFromProfile(const TrafficProfile& profile, uint32_t messages,
                                            uint64_t seed, uint64_t max_total_bytes = 64ull << 20);

// {"bucket label": messages, ...} for the non-empty buckets, e.g. {"512B": 120}.
std::string ProfileJson(const TrafficProfile& profile);

}  // namespace artune::watch
