// Which ranks of a cluster run measure which, and when: rounds of disjoint pairs.
//
// Every round is a matching (no rank in two pairs), so the pairs of a round run at
// the same time without two tests sharing a host, and a round takes as long as its
// slowest pair. Three schedules:
//   ring      links i - i+1 (mod N): 1 round for N = 2, 2 rounds for even N, 3 for
//             odd N (an odd cycle needs a third); N links (1 for N = 2).
//   all       every pair once, by the circle method: N-1 rounds of N/2 pairs for
//             even N; N rounds of (N-1)/2 pairs for odd N (each rank sits out one
//             round, its bye). N(N-1)/2 links.
//   random:K  K seeded random perfect matchings (a bye for odd N), a link already
//             scheduled in an earlier round dropped (and a round left empty too):
//             at most K*floor(N/2) links, sampling `all` when N is too large to
//             measure every pair (bench/cluster.md).
// The client of a link is its lower rank, except ring's wrap-around link N-1 - 0.
//
// Pure and deterministic: the same spec, ranks and seed give the same schedule, so
// `--resume` rebuilds the schedule of a stored run and skips its stored links.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"

namespace artune::tuner {

struct RankPair {
  uint32_t client = 0;  // runs the measurement
  uint32_t server = 0;  // serves it
  bool operator==(const RankPair&) const = default;
};

struct PairSchedule {
  std::string spec;  // canonical: "ring" | "all" | "random:K"
  uint32_t ranks = 0;
  std::vector<std::vector<RankPair>> rounds;  // each a matching; none empty

  size_t links() const;  // pairs over every round
};

// Builds the schedule for `spec` ("ring", "all" or "random:K", K from 1 to 1000000)
// over `ranks` ranks (at least 2); `seed` drives random:K only. Errors:
// kInvalidArgument naming the accepted forms.
Result<PairSchedule> MakePairSchedule(std::string_view spec, uint32_t ranks, uint64_t seed);

}  // namespace artune::tuner
