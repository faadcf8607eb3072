// TryCallAsync, the client's call that never waits for a call slot (the relay's
// loop relies on it), end to end on loopback over every fabric. The suite is
// EngineTest's: engine_test.cc instantiates it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "engine_fixture.h"
#include "engine_test_util.h"

namespace artune::transport {
namespace {

using testing::MakePayload;
using testing::Views;

// TryCallAsync never waits for a call slot: with max_outstanding calls in flight it
// says no at once and leaves `done` alone; once a call completes it starts calls
// again. (The relay's loop relies on it: a hung peer must not stall it.)
TEST_P(EngineTest, TryCallAsyncRefusesAtOnceWhenEverySlotIsTaken) {
  config_.max_outstanding = 2;
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  std::mutex mutex;
  std::condition_variable changed;
  int entered = 0;
  bool release = false;
  server_->RegisterHandler("block", [&](const Message& request, ResponseWriter& response) {
    std::unique_lock lock(mutex);
    ++entered;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
    for (const ConstSlice& slice : request.slices()) response.Append(slice);
    return Status::Ok();
  });
  auto payload = MakePayload({100}, 21);
  auto views = Views(payload);
  std::atomic<int> answered{0};
  auto count_answer = [&answered](Result<Message> response) {
    if (response.ok()) ++answered;
  };
  for (int i = 0; i < 2; ++i) {
    Client::Done done = count_answer;
    ASSERT_TRUE(client_->TryCallAsync("block", views, {}, std::move(done)));
  }
  std::atomic<bool> kept_called{false};
  Client::Done kept = [&kept_called](Result<Message>) { kept_called = true; };
  EXPECT_FALSE(client_->TryCallAsync("block", views, {}, std::move(kept)));
  ASSERT_TRUE(kept) << "a refused call's done was taken";
  EXPECT_FALSE(kept_called);
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return entered == 2; }));
    release = true;
    changed.notify_all();
  }
  for (int i = 0; i < 1000 && answered.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(answered.load(), 2);
  EXPECT_TRUE(client_->TryCallAsync("block", views, {}, std::move(kept)));
  for (int i = 0; i < 1000 && !kept_called.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(kept_called.load());
}

// TryCallAsync never waits for a handshake either: once the server was
// reconfigured (the new epoch came with a response) it says no, `done` untouched,
// until Refresh() has fetched the new values. (Before, it handshook inline: up to
// the control deadline on the relay's loop when the peer hung.)
TEST_P(EngineTest, TryCallAsyncLeavesADueHandshakeToRefresh) {
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  EchoAndValidate({4096}, 22);
  EXPECT_FALSE(client_->RefreshDue());
  Config smaller = config_;
  smaller.eager_threshold = 2048;
  smaller.coalesce_limit = 2048;
  ASSERT_TRUE(server_->Reconfigure(smaller).ok());
  auto payload = MakePayload({100}, 23);
  auto views = Views(payload);
  std::promise<Status> answered;
  Client::Done done = [&answered](Result<Message> response) {
    answered.set_value(response.ok() ? Status::Ok() : response.status());
  };
  ASSERT_TRUE(client_->TryCallAsync("echo", views, {}, std::move(done)));
  auto first = answered.get_future();
  ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_TRUE(first.get().ok());
  // That response carried the server's new epoch.
  EXPECT_TRUE(client_->RefreshDue());
  std::atomic<bool> kept_called{false};
  Client::Done kept = [&kept_called](Result<Message>) { kept_called = true; };
  EXPECT_FALSE(client_->TryCallAsync("echo", views, {}, std::move(kept)));
  ASSERT_TRUE(kept) << "a refused call's done was taken";
  EXPECT_EQ(client_->config().eager_threshold, config_.eager_threshold);
  ASSERT_TRUE(client_->Refresh().ok());
  EXPECT_FALSE(client_->RefreshDue());
  EXPECT_EQ(client_->config().eager_threshold, 2048u);
  EchoAndValidate({4096}, 24);
  EXPECT_FALSE(kept_called.load());
}

}  // namespace
}  // namespace artune::transport
