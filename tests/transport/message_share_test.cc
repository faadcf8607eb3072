// Message::Share: a handler keeps its request past its return, a caller its
// response past the Message it got, without a copy; the bytes stay as they were
// while later calls on the same connection reuse the transport's memory. End to
// end over every fabric; the suite is EngineTest's (engine_test.cc instantiates it).
#include <mutex>
#include <vector>

#include "engine_fixture.h"
#include "engine_test_util.h"

namespace artune::transport {
namespace {

using testing::MakePayload;
using testing::SameSlices;
using testing::Views;

// Sizes that take every protocol: eager, coalesced eager, rendezvous and chunked
// rendezvous (TestConfig's thresholds are well below 1 MiB and 3 MiB).
const std::vector<size_t> kMixedSizes = {100, 7, 4096, 300u << 10, 3u << 20};

TEST_P(EngineTest, ARequestHeldPastItsHandlerKeepsItsBytesThroughLaterCalls) {
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  std::mutex mutex;
  std::vector<Message> kept;
  server_->RegisterHandler("keep", [&](const Message& request, ResponseWriter&) {
    std::lock_guard lock(mutex);
    kept.push_back(request.Share());
    return Status::Ok();
  });
  const auto held_payload = MakePayload(kMixedSizes, 1);
  auto held_call = client_->Call("keep", Views(held_payload));
  ASSERT_TRUE(held_call.ok()) << held_call.status().ToString();
  // Later calls of the same sizes and other bytes, more of them than the
  // connection's receive buffers and call slots: the memory the first request
  // came in is the transport's again by now, unless the hold keeps it.
  for (uint32_t seed = 2; seed < 40; ++seed) {
    const auto payload = MakePayload(kMixedSizes, seed);
    auto echoed = client_->Call("echo", Views(payload));
    ASSERT_TRUE(echoed.ok()) << echoed.status().ToString();
    ASSERT_TRUE(SameSlices(*echoed, payload));
  }
  std::lock_guard lock(mutex);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(SameSlices(kept[0], held_payload));
}

TEST_P(EngineTest, AResponseSharedOutlivesTheMessageItCameIn) {
  ASSERT_NO_FATAL_FAILURE(StartPair(config_));
  const auto payload = MakePayload(kMixedSizes, 41);
  Message held;
  {
    auto response = client_->Call("echo", Views(payload));
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    held = response->Share();
    ASSERT_TRUE(SameSlices(*response, payload));  // both read the same bytes meanwhile
  }
  for (uint32_t seed = 42; seed < 80; ++seed) {
    const auto other = MakePayload(kMixedSizes, seed);
    auto echoed = client_->Call("echo", Views(other));
    ASSERT_TRUE(echoed.ok()) << echoed.status().ToString();
  }
  EXPECT_TRUE(SameSlices(held, payload));
}

}  // namespace
}  // namespace artune::transport
