// The pair schedules of a cluster run: every round a matching, every scheduled link
// once, the round and link counts pair_schedule.h promises, over many rank counts.
#include "artune/cluster/pair_schedule.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace artune::tuner {
namespace {

using Link = std::pair<uint32_t, uint32_t>;

Link Unordered(const RankPair& pair) {
  return {std::min(pair.client, pair.server), std::max(pair.client, pair.server)};
}

// The properties every schedule has; returns its links, unordered.
std::set<Link> CheckSchedule(const PairSchedule& schedule) {
  std::set<Link> links;
  for (size_t r = 0; r < schedule.rounds.size(); ++r) {
    SCOPED_TRACE("round " + std::to_string(r));
    const auto& round = schedule.rounds[r];
    EXPECT_FALSE(round.empty());
    EXPECT_LE(round.size(), schedule.ranks / 2);
    std::set<uint32_t> busy;
    for (const RankPair& pair : round) {
      EXPECT_NE(pair.client, pair.server);
      EXPECT_LT(pair.client, schedule.ranks);
      EXPECT_LT(pair.server, schedule.ranks);
      EXPECT_TRUE(busy.insert(pair.client).second) << "rank " << pair.client << " twice";
      EXPECT_TRUE(busy.insert(pair.server).second) << "rank " << pair.server << " twice";
      EXPECT_TRUE(links.insert(Unordered(pair)).second)
          << "link " << pair.client << "-" << pair.server << " scheduled twice";
    }
  }
  EXPECT_EQ(links.size(), schedule.links());
  return links;
}

TEST(PairSchedule, AllIsEveryPairInTheFewestRounds) {
  for (uint32_t ranks = 2; ranks <= 33; ++ranks) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    auto schedule = MakePairSchedule("all", ranks, 0);
    ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
    const std::set<Link> links = CheckSchedule(*schedule);
    EXPECT_EQ(links.size(), static_cast<size_t>(ranks) * (ranks - 1) / 2);
    EXPECT_EQ(schedule->rounds.size(), ranks % 2 == 0 ? ranks - 1 : ranks);
    // Perfect matchings: every rank busy in every round (but its bye for odd N).
    for (const auto& round : schedule->rounds) EXPECT_EQ(round.size(), ranks / 2);
  }
}

TEST(PairSchedule, AllOfFourIsThreeRoundsOfTwo) {
  auto schedule = MakePairSchedule("all", 4, 0);
  ASSERT_TRUE(schedule.ok());
  ASSERT_EQ(schedule->rounds.size(), 3u);
  EXPECT_EQ(schedule->links(), 6u);
  EXPECT_EQ(schedule->spec, "all");
  for (const auto& round : schedule->rounds) {
    for (const RankPair& pair : round) EXPECT_LT(pair.client, pair.server);
  }
}

TEST(PairSchedule, RingIsEveryNeighbourOnce) {
  for (uint32_t ranks = 2; ranks <= 33; ++ranks) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    auto schedule = MakePairSchedule("ring", ranks, 0);
    ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
    const std::set<Link> links = CheckSchedule(*schedule);
    const size_t expected_rounds = ranks == 2 ? 1 : (ranks % 2 == 0 ? 2 : 3);
    EXPECT_EQ(schedule->rounds.size(), expected_rounds);
    EXPECT_EQ(links.size(), ranks == 2 ? 1u : ranks);
    for (uint32_t i = 0; i < ranks; ++i) {
      const uint32_t next = (i + 1) % ranks;
      EXPECT_TRUE(links.count({std::min(i, next), std::max(i, next)}))
          << "missing " << i << "-" << next;
    }
  }
}

TEST(PairSchedule, RandomIsSeededMatchingsWithoutRepeats) {
  for (uint32_t ranks : {2u, 3u, 4u, 7u, 64u, 513u}) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    auto schedule = MakePairSchedule("random:5", ranks, 42);
    ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
    const std::set<Link> links = CheckSchedule(*schedule);
    EXPECT_LE(schedule->rounds.size(), 5u);
    EXPECT_LE(links.size(), 5u * (ranks / 2));
    // The first matching is perfect: nothing scheduled before it.
    EXPECT_EQ(schedule->rounds[0].size(), ranks / 2);
    auto again = MakePairSchedule("random:5", ranks, 42);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->rounds, schedule->rounds) << "the same seed gives the same schedule";
  }
  // With two ranks there is one link: the later matchings repeat it and are dropped.
  auto two = MakePairSchedule("random:5", 2, 1);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->rounds.size(), 1u);
  auto other_seed = MakePairSchedule("random:5", 64, 43);
  auto seed_42 = MakePairSchedule("random:5", 64, 42);
  ASSERT_TRUE(other_seed.ok() && seed_42.ok());
  EXPECT_NE(other_seed->rounds, seed_42->rounds);
}

TEST(PairSchedule, RandomOnLargeClustersSamplesAFewRoundsOfEveryRank) {
  auto schedule = MakePairSchedule("random:3", 4096, 7);
  ASSERT_TRUE(schedule.ok());
  CheckSchedule(*schedule);
  EXPECT_EQ(schedule->rounds.size(), 3u);
  // Repeats among 3 random matchings of 4096 ranks are rare, never most links.
  EXPECT_GT(schedule->links(), 3u * 2048 - 10);
  EXPECT_EQ(schedule->spec, "random:3");
}

TEST(PairSchedule, RefusesWhatItCannotSchedule) {
  for (const char* spec : {"", "star", "random", "random:", "random:0", "random:x", "random:-1",
                           "random:2x", "random:1000001"}) {
    SCOPED_TRACE(spec);
    EXPECT_EQ(MakePairSchedule(spec, 4, 0).status().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(MakePairSchedule("all", 1, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakePairSchedule("ring", 0, 0).status().code(), ErrorCode::kInvalidArgument);
  auto canonical = MakePairSchedule("random:007", 4, 0);
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(canonical->spec, "random:7");
}

}  // namespace
}  // namespace artune::tuner
