// `artune watch`'s decisions in the store (schema v11): every field back as written,
// newest first, and what cannot be a decision refused before it is written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "artune/db/store.h"
#include "test_util.h"

namespace artune::db {
namespace {

using namespace testing;  // the store tests' helpers (test_util.h, migration_util.h)

WatchEventRecord Decision(WatchAction action, const std::string& at) {
  WatchEventRecord event;
  event.at = at;
  event.servers = "127.0.0.1:50061,127.0.0.1:50062";
  event.action = action;
  event.reason = "drift 97 %: predicted to save 19 %, measured 1.2x";
  event.drift = 0.97;
  event.window_slices = 642;
  event.in_force_knobs = "eager_threshold=16KiB";
  event.candidate_knobs = "eager_threshold=64KiB";
  event.predicted_margin = 0.19;
  event.paired_median = 1.2;
  event.paired_low = 1.1;
  event.paired_high = 1.3;
  event.pairs = 6;
  event.verdict = "faster";
  event.profile_json = R"({"16KiB":600,"1MiB":42})";
  return event;
}

TEST(WatchEvents, ComeBackAsWrittenNewestFirst) {
  TempDir dir;
  auto store = Store::Open(dir.File("a.db"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const WatchEventRecord first = Decision(WatchAction::kBaseline, "2026-11-27T14:00:00Z");
  const WatchEventRecord second = Decision(WatchAction::kRollBack, "2026-11-27T14:05:00Z");
  ASSERT_TRUE((*store)->InsertWatchEvent(first).ok());
  auto id = (*store)->InsertWatchEvent(second);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto listed = (*store)->ListWatchEvents(0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 2u);
  const WatchEventRecord& newest = (*listed)[0];
  EXPECT_EQ(newest.id, *id);
  EXPECT_EQ(newest.action, WatchAction::kRollBack);
  EXPECT_EQ(newest.at, second.at);
  EXPECT_EQ(newest.servers, second.servers);
  EXPECT_EQ(newest.reason, second.reason);
  EXPECT_DOUBLE_EQ(newest.drift, 0.97);
  EXPECT_EQ(newest.window_slices, 642u);
  EXPECT_EQ(newest.candidate_knobs, second.candidate_knobs);
  EXPECT_DOUBLE_EQ(newest.paired_low, 1.1);
  EXPECT_EQ(newest.pairs, 6u);
  EXPECT_EQ(newest.verdict, "faster");
  EXPECT_EQ(newest.profile_json, second.profile_json);
  EXPECT_EQ((*listed)[1].action, WatchAction::kBaseline);
  EXPECT_EQ((*store)->ListWatchEvents(1)->size(), 1u);
}

TEST(WatchEvents, WhatCannotBeADecisionIsRefused) {
  TempDir dir;
  auto store = Store::Open(dir.File("a.db"));
  ASSERT_TRUE(store.ok());
  WatchEventRecord event = Decision(WatchAction::kKeep, "");
  event.reason.clear();
  EXPECT_EQ((*store)->InsertWatchEvent(event).status().code(), ErrorCode::kInvalidArgument);
  event = Decision(WatchAction::kKeep, "");
  event.drift = 1.5;
  EXPECT_EQ((*store)->InsertWatchEvent(event).status().code(), ErrorCode::kInvalidArgument);
  event = Decision(WatchAction::kKeep, "");
  event.paired_median = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ((*store)->InsertWatchEvent(event).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE((*store)->ListWatchEvents(0)->empty());
}

TEST(WatchActions, EveryActionHasOneStoredName) {
  for (WatchAction action : {WatchAction::kBaseline, WatchAction::kKeep, WatchAction::kHold,
                             WatchAction::kPush, WatchAction::kRollBack}) {
    EXPECT_EQ(ParseWatchAction(WatchActionName(action)), action);
  }
  EXPECT_FALSE(ParseWatchAction("pushed"));
}

}  // namespace
}  // namespace artune::db
