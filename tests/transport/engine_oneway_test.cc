// One-way calls (CallOptions::one_way, the relay's Data): no response per call,
// the server returns their slots in batches. End to end on loopback over every
// fabric; the suite is EngineTest's (engine_test.cc instantiates it).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine_fixture.h"
#include "engine_test_util.h"

namespace artune::transport {
namespace {

using testing::MakePayload;
using testing::Views;

// Waits (bounded: 20 s) until `count` reaches `want`.
bool WaitFor(const std::atomic<int>& count, int want) {
  for (int i = 0; i < 2000 && count.load() < want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return count.load() >= want;
}

// Many more one-way calls than call slots and receive buffers, small and large
// (rendezvous) mixed: each arrives exactly once, byte for byte, and every `done`
// runs ok. (Not in call order: a rendezvous request is handled once read, after
// small ones sent behind it; the relay orders its chunks by seq.) The slots only come back in the
// server's batches: a batch lost (oneway_done not sent) leaves the client without slots, and its
// calls then fail with kTimeout after timeout_ms instead of completing.
TEST_P(EngineTest, OneWayCallsArriveExactlyOnceWithFewSlots) {
  config_.max_outstanding = 4;
  config_.eager_buffer_count = 4;
  config_.timeout_ms = 5000;
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  std::mutex mutex;
  std::vector<std::vector<std::byte>> received;
  server_->RegisterHandler(
      "sink",
      [&](const Message& request, ResponseWriter&) {
        std::vector<std::byte> bytes;
        for (const ConstSlice& slice : request.slices()) {
          bytes.insert(bytes.end(), slice.data(), slice.data() + slice.size());
        }
        std::lock_guard lock(mutex);
        received.push_back(std::move(bytes));
        return Status::Ok();
      },
      HandlerOptions{.non_blocking = true});

  constexpr int kCalls = 300;
  std::vector<std::vector<std::vector<std::byte>>> payloads;
  for (int i = 0; i < kCalls; ++i) {
    const size_t size = i % 50 == 7 ? 256 * 1024 : 1 + static_cast<size_t>(i * 37) % 3000;
    payloads.push_back(MakePayload({size}, static_cast<uint32_t>(i)));
  }
  std::vector<std::vector<ConstSlice>> views;
  for (const auto& payload : payloads) views.push_back(Views(payload));
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::mutex failure_mutex;
  std::string first_failure;
  for (int i = 0; i < kCalls; ++i) {
    client_->CallAsync("sink", views[i], CallOptions{.one_way = true},
                       [&](Result<Message> outcome) {
                         if (outcome.ok()) {
                           EXPECT_TRUE(outcome->slices().empty());
                           ++ok;
                           return;
                         }
                         std::lock_guard lock(failure_mutex);
                         if (first_failure.empty()) first_failure = outcome.status().ToString();
                         ++failed;
                       });
  }
  // The last few are returned with the next packet the server sends: a ping.
  ASSERT_TRUE(client_->Call("echo", views[0]).ok());
  EXPECT_TRUE(WaitFor(ok, kCalls)) << ok.load() << " of " << kCalls << " completed, "
                                   << failed.load() << " failed, first: " << first_failure;
  EXPECT_EQ(failed.load(), 0) << first_failure;
  std::vector<std::vector<std::byte>> expected;
  for (const auto& payload : payloads) expected.push_back(payload[0]);
  std::sort(expected.begin(), expected.end());
  std::lock_guard lock(mutex);
  std::sort(received.begin(), received.end());
  ASSERT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected) << "a request arrived changed, twice or not at all";
}

// A one-way call keeps its slot until the server has run the handler: with the
// handler stalled, max_outstanding one-way calls take every slot and the next is
// refused (the server never holds more than max_outstanding calls); once the
// handlers run, their calls complete and the slots are free again.
TEST_P(EngineTest, AStalledHandlerHoldsTheSlotsOfOneWayCalls) {
  config_.max_outstanding = 2;
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  std::mutex mutex;
  std::condition_variable changed;
  int entered = 0;
  bool release = false;
  server_->RegisterHandler("block", [&](const Message&, ResponseWriter&) {
    std::unique_lock lock(mutex);
    ++entered;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
    return Status::Ok();
  });
  auto payload = MakePayload({100}, 31);
  auto views = Views(payload);
  std::atomic<int> ok{0};
  auto count_ok = [&ok](Result<Message> outcome) {
    if (outcome.ok()) ++ok;
  };
  const CallOptions one_way{.one_way = true};
  for (int i = 0; i < 2; ++i) {
    Client::Done done = count_ok;
    ASSERT_TRUE(client_->TryCallAsync("block", views, one_way, std::move(done)));
  }
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return entered == 2; }));
  }
  EXPECT_EQ(ok.load(), 0) << "a one-way call completed before its handler ran";
  Client::Done kept = count_ok;
  EXPECT_FALSE(client_->TryCallAsync("block", views, one_way, std::move(kept)));
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  changed.notify_all();
  EXPECT_TRUE(WaitFor(ok, 2));
  EXPECT_TRUE(client_->TryCallAsync("block", views, one_way, std::move(kept)));
  EXPECT_TRUE(WaitFor(ok, 3));
}

// A one-way handler's error has nobody to go to but the connection: it closes,
// the call fails, and the client's next call goes on a new connection.
TEST_P(EngineTest, AFailedOneWayHandlerFailsItsCallByClosingTheConnection) {
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  auto payload = MakePayload({64}, 32);
  auto views = Views(payload);
  std::atomic<int> failed{0};
  client_->CallAsync("fail", views, CallOptions{.one_way = true}, [&](Result<Message> outcome) {
    if (!outcome.ok()) ++failed;
  });
  EXPECT_TRUE(WaitFor(failed, 1));
  EchoAndValidate({64}, 33);
}

}  // namespace
}  // namespace artune::transport
