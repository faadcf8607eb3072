#include "artune/cluster/pair_schedule.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <random>
#include <set>
#include <utility>

namespace artune::tuner {
namespace {

constexpr uint32_t kMaxRandomRounds = 1000000;

RankPair Ordered(uint32_t a, uint32_t b) { return a < b ? RankPair{a, b} : RankPair{b, a}; }

std::vector<std::vector<RankPair>> Ring(uint32_t ranks) {
  if (ranks == 2) return {{{0, 1}}};
  // Links i - i+1 taken alternately: even i in one round, odd i in the next; for odd
  // N the last link (N-1 - 0) shares rank 0 with the first and gets a round alone.
  std::vector<std::vector<RankPair>> rounds(ranks % 2 == 0 ? 2 : 3);
  for (uint32_t i = 0; i < ranks; ++i) {
    const uint32_t next = (i + 1) % ranks;
    const size_t round = (ranks % 2 == 1 && i == ranks - 1) ? 2 : i % 2;
    rounds[round].push_back({i, next});
  }
  return rounds;
}

// The circle method: rank `fixed` stays put while the others rotate one place per
// round; in round r, r meets `fixed` and r-k meets r+k (mod the circle). For odd N
// a phantom rank is the fixed one, and meeting it is a bye.
std::vector<std::vector<RankPair>> All(uint32_t ranks) {
  const uint32_t circle = ranks % 2 == 0 ? ranks - 1 : ranks;  // ranks that rotate
  const uint32_t fixed = circle;                               // a phantom for odd N
  std::vector<std::vector<RankPair>> rounds(circle);
  for (uint32_t r = 0; r < circle; ++r) {
    if (fixed < ranks) rounds[r].push_back(Ordered(r, fixed));
    for (uint32_t k = 1; k <= (circle - 1) / 2; ++k) {
      rounds[r].push_back(Ordered((r + k) % circle, (r + circle - k) % circle));
    }
    std::sort(rounds[r].begin(), rounds[r].end(),
              [](const RankPair& a, const RankPair& b) { return a.client < b.client; });
  }
  return rounds;
}

std::vector<std::vector<RankPair>> Random(uint32_t ranks, uint32_t matchings, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::vector<uint32_t> order(ranks);
  std::set<std::pair<uint32_t, uint32_t>> scheduled;
  std::vector<std::vector<RankPair>> rounds;
  for (uint32_t m = 0; m < matchings; ++m) {
    std::iota(order.begin(), order.end(), 0u);
    // Fisher-Yates by hand: std::shuffle's use of the generator is not specified,
    // and a stored run must get the same schedule from any standard library.
    for (uint32_t i = ranks - 1; i > 0; --i) {
      std::swap(order[i], order[generator() % (i + 1)]);
    }
    std::vector<RankPair> round;
    for (uint32_t i = 0; i + 1 < ranks; i += 2) {
      const RankPair pair = Ordered(order[i], order[i + 1]);
      if (scheduled.insert({pair.client, pair.server}).second) round.push_back(pair);
    }
    std::sort(round.begin(), round.end(),
              [](const RankPair& a, const RankPair& b) { return a.client < b.client; });
    if (!round.empty()) rounds.push_back(std::move(round));
  }
  return rounds;
}

Status BadSpec(std::string_view spec) {
  return Status::InvalidArgument("pair schedule \"" + std::string(spec) +
                                 "\" is none of ring, all, random:K (K from 1 to " +
                                 std::to_string(kMaxRandomRounds) + ")");
}

}  // namespace

size_t PairSchedule::links() const {
  size_t total = 0;
  for (const auto& round : rounds) total += round.size();
  return total;
}

Result<PairSchedule> MakePairSchedule(std::string_view spec, uint32_t ranks, uint64_t seed) {
  if (ranks < 2) {
    return Status::InvalidArgument("a pair schedule needs at least 2 ranks, not " +
                                   std::to_string(ranks) + " (mpirun -np N with N >= 2)");
  }
  PairSchedule schedule;
  schedule.ranks = ranks;
  if (spec == "ring") {
    schedule.rounds = Ring(ranks);
  } else if (spec == "all") {
    schedule.rounds = All(ranks);
  } else if (spec.starts_with("random:")) {
    const std::string_view count = spec.substr(7);
    uint32_t matchings = 0;
    const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), matchings);
    if (error != std::errc() || end != count.data() + count.size() || matchings == 0 ||
        matchings > kMaxRandomRounds) {
      return BadSpec(spec);
    }
    schedule.rounds = Random(ranks, matchings, seed);
    schedule.spec = "random:" + std::to_string(matchings);
    return schedule;
  } else {
    return BadSpec(spec);
  }
  schedule.spec = std::string(spec);
  return schedule;
}

}  // namespace artune::tuner
