// WatchSource over a real store file: says how to make one before it exists, then
// follows decisions committed by a writer whose connection stays open (WAL, as
// `artune watch run` keeps its store), newest first, with the table's total.
#include "watch_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "store_file_test.h"

namespace artune::dashboard {
namespace {

class WatchSourceTest : public StoreFileTest {
 protected:
  static void InsertEvent(db::Store& store, db::WatchAction action, const std::string& reason) {
    db::WatchEventRecord event;
    event.servers = "127.0.0.1:7001";
    event.action = action;
    event.reason = reason;
    event.in_force_knobs = "chunk_size=512KiB";
    auto id = store.InsertWatchEvent(event);
    ASSERT_TRUE(id.ok()) << id.status().message();
  }
};

TEST_F(WatchSourceTest, FollowsDecisionsAsTheyAreStoredNewestFirst) {
  WatchSource source(path_, 2);
  WatchPanel panel = source.Poll();
  EXPECT_EQ(panel.store_path, path_);
  EXPECT_NE(panel.error.find("no store yet"), std::string::npos) << panel.error;
  EXPECT_TRUE(panel.events.empty());

  auto writer = db::Store::Open(path_);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  panel = source.Poll();
  EXPECT_TRUE(panel.error.empty()) << panel.error;
  EXPECT_EQ(panel.total, 0);

  InsertEvent(**writer, db::WatchAction::kBaseline, "reference profile");
  InsertEvent(**writer, db::WatchAction::kPush, "pushed live");
  InsertEvent(**writer, db::WatchAction::kRollBack, "re-check: slower");
  panel = source.Poll();
  EXPECT_TRUE(panel.error.empty()) << panel.error;
  EXPECT_EQ(panel.total, 3);
  ASSERT_EQ(panel.events.size(), 2u);  // the rows asked for
  EXPECT_EQ(panel.events[0].action, db::WatchAction::kRollBack);
  EXPECT_EQ(panel.events[1].action, db::WatchAction::kPush);
  EXPECT_GT(panel.events[0].id, panel.events[1].id);
}

}  // namespace
}  // namespace artune::dashboard
