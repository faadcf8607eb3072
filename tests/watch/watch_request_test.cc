// `artune watch run`'s request made into the watcher's options: the checks in the
// order the command has always made them, and what the options carry.
#include "artune/watch/watch_request.h"

#include <gtest/gtest.h>

#include <chrono>

namespace artune::watch {
namespace {

WatchRequest ValidRequest() {
  WatchRequest request;
  request.link.servers = {"127.0.0.1:1", "127.0.0.1:2"};
  request.link.ab_peer = "127.0.0.1:3";
  request.link.inflight = 4;
  request.min_gap_s = 90;
  request.replay_messages = 16;
  request.dry_run = true;
  return request;
}

TEST(WatchRequestTest, CarriesThePolicyTheSpaceAndTheServers) {
  Result<WatcherOptions> options = MakeWatcherOptions(ValidRequest());
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->policy.min_gap, std::chrono::seconds(90));
  EXPECT_EQ(options->servers_text, "127.0.0.1:1,127.0.0.1:2");
  EXPECT_EQ(options->inflight, 4);
  EXPECT_EQ(options->replay_messages, 16u);
  EXPECT_TRUE(options->dry_run);
  EXPECT_FALSE(options->space.axes.empty());  // the default space
}

TEST(WatchRequestTest, ThePolicyIsCheckedBeforeTheIntervalAndTheIntervalBeforeTheSpace) {
  WatchRequest request = ValidRequest();
  request.policy.drift_threshold = 5;
  request.interval_s = 0;
  request.axes = {"bogus=1"};
  Result<WatcherOptions> options = MakeWatcherOptions(request);
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find("--drift"), std::string::npos)
      << options.status().ToString();

  request.policy.drift_threshold = 0.25;
  options = MakeWatcherOptions(request);
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.status().message(), "--interval must be above 0");

  request.interval_s = 5;
  options = MakeWatcherOptions(request);
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find("bogus"), std::string::npos)
      << options.status().ToString();
}

TEST(WatchRequestTest, AnEventsJsonCarriesItsEvidenceAndProfile) {
  db::WatchEventRecord event;
  event.id = 7;
  event.pairs = 6;
  event.paired_median = 1.2;
  event.profile_json = R"({"buckets":[1,2]})";
  const nlohmann::ordered_json json = WatchEventJson(event);
  EXPECT_EQ(json.at("id"), 7);
  EXPECT_EQ(json.at("paired").at("pairs"), 6);
  EXPECT_DOUBLE_EQ(json.at("paired").at("median").get<double>(), 1.2);
  EXPECT_EQ(json.at("profile").at("buckets").size(), 2u);
  event.profile_json.clear();
  EXPECT_TRUE(WatchEventJson(event).at("profile").empty());
}

}  // namespace
}  // namespace artune::watch
