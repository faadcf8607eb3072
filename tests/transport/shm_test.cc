// The shm fabric's own failure modes: a peer that scribbles on the shared rings is
// dropped with kProtocolError and this side carries on; where process_vm_readv is
// refused reads fall back to the owner's copy through the ring (and say so); no
// segment outlives the two sides. The interface-level suites (fabric_test,
// engine_test, failure_test) run on shm through TestFabrics().
#include <gmock/gmock.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>

#include "engine_test_util.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_doorbell.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/spin_governor.h"
#include "shm_test_util.h"

namespace artune::transport {
namespace {

using ::testing::HasSubstr;

using testing::Completions;
using testing::ScopedEnv;
using testing::ShmPair;

// Lines of /proc/self/maps and links of /proc/self/fd that name an shm segment.
int SegmentsHeld() {
  int held = 0;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("artune-shm") != std::string::npos) ++held;
  }
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const auto target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target.string().find("artune-shm") != std::string::npos) ++held;
  }
  return held;
}

class ShmTest : public ::testing::Test, public ShmPair {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }
};

TEST_F(ShmTest, AHeadBeyondTheRingIsDropped) {
  Segment()->rings[0].head.store(fabric::shm::kRingBytes * 3);
  WakeServer();
  ExpectServerDropsTheConnection();
}

TEST_F(ShmTest, ARecordOfUnknownKindOrImpossibleLengthIsDropped) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    if (variant > 0) {
      Close();
      Open();
    }
    fabric::shm::RecordHeader header;
    header.kind = variant == 0 ? 99u : static_cast<uint32_t>(fabric::shm::RecordKind::kSend);
    header.length = variant == 1 ? fabric::shm::kRingBytes : 4096;  // 2: more than published
    std::memcpy(ServerBoundData(), &header, sizeof(header));
    Segment()->rings[0].head.store(variant == 2 ? 64 : sizeof(header) + 4096);
    WakeServer();
    ExpectServerDropsTheConnection();
  }
}

TEST_F(ShmTest, AConsumerPositionThatGoesBackIsDropped) {
  // The server sends once and the client takes it; the client's "consumer" then
  // claims a position ahead of everything the server published.
  ASSERT_TRUE(endpoint_->PostRecv(client_memory_.data(), 64, client_keys_.lkey, 1).ok());
  fabric::SgEntry entry{server_memory_.data(), 8, 0};
  ASSERT_TRUE(accepted_->PostSend(std::span(&entry, 1)).ok());
  ASSERT_EQ(client_completions_.Next().kind, fabric::CompletionKind::kRecv);
  Segment()->rings[1].tail.store(1u << 30);
  EXPECT_FALSE(accepted_->PostSend(std::span(&entry, 1)).ok());
  fabric::Completion end = server_completions_.Next();
  EXPECT_EQ(end.kind, fabric::CompletionKind::kDisconnected);
  EXPECT_EQ(end.status.code(), ErrorCode::kProtocolError) << end.status.ToString();
}

TEST_F(ShmTest, RandomScribblesOnTheWholeSegmentNeverCrashTheServer) {
  std::mt19937_64 random(14);
  std::atomic<bool> stop{false};
  auto* words = reinterpret_cast<uint64_t*>(Segment());
  const size_t count = fabric::shm::kSegmentBytes / sizeof(uint64_t);
  std::thread scribbler([&] {
    while (!stop) words[random() % count] = random() % 3 == 0 ? random() : random() % 4096;
  });
  fabric::SgEntry entry{client_memory_.data(), 64, 0};
  for (int i = 0; i < 1000; ++i) (void)endpoint_->PostSend(std::span(&entry, 1));
  fabric::Completion end = server_completions_.Next();
  while (end.kind == fabric::CompletionKind::kRecv) end = server_completions_.Next();
  stop = true;
  scribbler.join();
  EXPECT_EQ(end.kind, fabric::CompletionKind::kDisconnected) << end.status.ToString();
  // The server still serves others.
  Close();
  Open();
  ReadOffer(4096);
}

TEST(ShmFallbackTest, RefusedProcessVmReadvFallsBackToTheOwnersCopy) {
  ScopedEnv refuse("ARTUNE_SHM_CMA", "eperm");
  auto& counters = fabric::shm::ReadCounters();
  const uint64_t refused_before = counters.cma_refused.load();
  const uint64_t copied_before = counters.owner_copy.load();
  ShmPair test;
  test.Open();
  test.ReadOffer(1024 * 1024 + 3);  // several fragments, and an odd length
  test.ReadOffer(100);
  test.Close();
  EXPECT_EQ(counters.cma_refused.load(), refused_before + 1) << "one refusal per endpoint";
  EXPECT_GE(counters.owner_copy.load(), copied_before + 2);
}

TEST(ShmFallbackTest, EngineCallsWorkWithoutProcessVmReadv) {
  ScopedEnv off("ARTUNE_SHM_CMA", "0");
  const uint64_t one_copy_before = fabric::shm::ReadCounters().one_copy.load();
  auto server = Server::Start(testing::TestConfig(FabricKind::kShm), "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);
  auto client = Client::Connect(testing::TestConfig(FabricKind::kShm), (*server)->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100, 3 * 1024 * 1024 + 5, 70 * 1024}, 9);
  Result<Message> response = (*client)->Call("echo", testing::Views(payload));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_TRUE(testing::SameSlices(*response, payload));
  EXPECT_EQ(fabric::shm::ReadCounters().one_copy.load(), one_copy_before);
  EXPECT_GT((*server)->stats().shm_reads_owner_copy, 0u);
}

// Event polling wakes the other side for nearly every record; the reader drains
// its doorbell every few sleeps, not once per wake-up (a recv per wake-up cost as
// much as the ring itself: bench/side-by-side.md, 2026-11-27 23:20).
TEST(ShmDoorbellTest, EventPollingDrainsTheDoorbellEveryFewWakeups) {
  Config config = testing::TestConfig(FabricKind::kShm);
  config.polling = PollingMode::kEvent;
  auto server = Server::Start(config, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);
  auto client = Client::Connect(config, (*server)->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100}, 4);
  auto& counts = fabric::shm::DoorbellCounts();
  const uint64_t rings_before = counts.rings.load();
  const uint64_t reads_before = counts.drain_reads.load();
  for (int i = 0; i < 2000; ++i) {
    Result<Message> response = (*client)->Call("echo", testing::Views(payload));
    ASSERT_TRUE(response.ok()) << response.status().ToString();
  }
  const uint64_t rings = counts.rings.load() - rings_before;
  const uint64_t reads = counts.drain_reads.load() - reads_before;
  ASSERT_GE(rings, 1000u) << "the calls did not wake the other side: not the case under test";
  EXPECT_LE(reads * 2, rings) << reads << " drain reads for " << rings << " rings";
}

// Runs `passes` idle caller passes of a busy shm fabric without connections on a
// new thread (its own IdleYield, from zero) and returns the yields and the
// pass's looks at the sockets they made. The progress thread parks meanwhile.
struct IdleSpinCalls {
  uint64_t yields = 0;
  uint64_t socket_looks = 0;
  int64_t milliseconds = 0;  // how long the passes took
};
IdleSpinCalls SpinIdle(uint64_t passes) {
  Config config = testing::TestConfig(FabricKind::kShm);
  config.polling = PollingMode::kBusy;
  auto made = fabric::MakeFabric(FabricKind::kShm, config);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  if (!made.ok()) return {};
  auto& shm = dynamic_cast<fabric::shm::ShmFabric&>(**made);
  shm.BeginCallerPolling();
  const uint64_t yields_before = fabric::IdleYields();
  const uint64_t looks_before = shm.pass_socket_looks();
  uint64_t progressed = 0;
  const auto started = std::chrono::steady_clock::now();
  std::thread spinner([&] {
    for (uint64_t i = 0; i < passes; ++i) progressed += shm.Poll() ? 1 : 0;
  });
  spinner.join();
  const auto spun = std::chrono::steady_clock::now() - started;
  shm.EndCallerPolling(false);
  EXPECT_EQ(progressed, 0u) << "nothing to move on a fabric without connections";
  return {fabric::IdleYields() - yields_before, shm.pass_socket_looks() - looks_before,
          std::chrono::duration_cast<std::chrono::milliseconds>(spun).count()};
}

class ShmBusyPollingTest : public ::testing::Test {
 protected:
  static bool NeverBusy() { return false; }
  void SetUp() override {
    governor_.ResetForTesting();
    governor_.SetHostCheckForTesting(&NeverBusy);
  }
  void TearDown() override {
    governor_.ResetForTesting();
    governor_.SetHostCheckForTesting(&fabric::SpinGovernor::HostIsOversubscribed);
  }
  static constexpr uint64_t kPasses = 64 * 1024;
  fabric::SpinGovernor& governor_ = fabric::SpinGovernor::Process();
};

// On a host with room a busy caller's idle spin (its wait for a reply) makes next
// to no system calls: a yield once per kIdlePassesPerYield passes after
// kIdlePassesBeforeYield of them (it yielded on every idle pass after 64), and a
// look at the sockets about once a millisecond (every 256 passes before: 256
// looks here, in a few milliseconds).
TEST_F(ShmBusyPollingTest, AnIdleSpinMakesFewSystemCallsWhereTheHostHasRoom) {
  const IdleSpinCalls calls = SpinIdle(kPasses);
  EXPECT_LE(calls.yields, 2 * kPasses / fabric::IdleYield::kIdlePassesPerYield);
  EXPECT_GE(calls.yields, 1u) << "a long idle spin still lets a thread on its core run";
  // One look at the first 256th pass (the last look is long ago), then one per
  // millisecond at most.
  EXPECT_LE(calls.socket_looks, static_cast<uint64_t>(calls.milliseconds) + 2)
      << "in " << calls.milliseconds << " ms";
}

// On a busy host (the governor backs off) the spin yields on every idle pass after
// the first kIdlePassesPerYield, as before: the thread it waits for may be
// waiting for this core.
TEST_F(ShmBusyPollingTest, AnIdleSpinYieldsEveryPassWhereTheHostIsBusy) {
  governor_.LostCpu(fabric::SpinGovernor::Clock::now());  // a back-off of 20 ms
  const IdleSpinCalls calls = SpinIdle(kPasses);
  // Not every one: a pass that found the pass lock held (the progress thread,
  // before it parked) ran nothing. A lazy spin would make about 1000.
  EXPECT_GE(calls.yields, kPasses / 2);
}

// fabric = auto: a server also listens on shm, a client on its host (same boot,
// network namespace and user) takes it when it asked for auto, and a client that
// asked for tcp keeps tcp. (A client of another user or namespace is in
// tests/cli: it needs a second process.)
TEST(ShmAutoTest, AutoServesClientsOnThisHostOverShm) {
  if (fabric::ResolveFabricKind(FabricKind::kAuto) != FabricKind::kTcp) {
    GTEST_SKIP() << "a verbs device makes auto resolve to verbs here (loopback test)";
  }
  auto server = Server::Start(testing::TestConfig(FabricKind::kAuto), "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ((*server)->fabric(), FabricKind::kTcp);
  testing::RegisterTestHandlers(**server);
  auto payload = testing::MakePayload({100, 3 * 1024 * 1024 + 5, 70 * 1024}, 11);
  for (FabricKind asked : {FabricKind::kAuto, FabricKind::kTcp}) {
    auto client = Client::Connect(testing::TestConfig(asked), (*server)->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    EXPECT_EQ((*client)->fabric(), asked == FabricKind::kAuto ? FabricKind::kShm : FabricKind::kTcp)
        << "client asked for " << fabric::FabricKindName(asked);
    for (int i = 0; i < 3; ++i) {
      Result<Message> response =
          (*client)->Call(i == 1 ? "echo_worker" : "echo", testing::Views(payload));
      ASSERT_TRUE(response.ok()) << response.status().ToString();
      EXPECT_TRUE(testing::SameSlices(*response, payload));
    }
  }
  EXPECT_EQ((*server)->stats().connections_accepted, 2u);
}

TEST(ShmSegmentTest, NoSegmentIsLeftAfterBothSidesAreGone) {
  const int before = SegmentsHeld();
  {
    ShmPair test;
    test.Open();
    EXPECT_GT(SegmentsHeld(), before);
    test.ReadOffer(64 * 1024);
    test.Close();
  }
  EXPECT_EQ(SegmentsHeld(), before);
  // memfd segments have no name: nothing in /dev/shm ever names them.
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_EQ(entry.path().filename().string().find("artune"), std::string::npos) << entry.path();
  }
}

// Not a test: the fabric's own round trip (no engine), to say where the time of an
// engine call goes. Run by hand:
//   transport_tests --gtest_also_run_disabled_tests --gtest_filter='*FabricRoundTrip*'
// The server's handler echoes on its progress thread; the caller spins on a flag.
class FabricRoundTrip : public ::testing::TestWithParam<std::tuple<FabricKind, PollingMode>> {};

TEST_P(FabricRoundTrip, DISABLED_HundredBytes) {
  const auto [kind, polling] = GetParam();
  Config config = testing::TestConfig(kind);
  config.polling = polling;
  auto server = std::move(fabric::MakeFabric(kind, config)).value();
  auto client = std::move(fabric::MakeFabric(kind, config)).value();
  std::vector<std::byte> server_memory(64 * 1024), client_memory(64 * 1024);
  const uint32_t server_lkey = server->Register(server_memory.data(), server_memory.size())->lkey;
  const uint32_t client_lkey = client->Register(client_memory.data(), client_memory.size())->lkey;
  constexpr uint64_t kBytes = 100;
  std::shared_ptr<fabric::Endpoint> accepted;
  auto listening = server->Listen(
      "127.0.0.1", [&](std::shared_ptr<fabric::Endpoint> endpoint, std::span<const std::byte>) {
        for (int i = 0; i < 4; ++i) {
          (void)endpoint->PostRecv(server_memory.data() + i * 1024, 1024, server_lkey, i);
        }
        endpoint->Start([&](fabric::Endpoint& self, const fabric::Completion& completion) {
          if (completion.kind != fabric::CompletionKind::kRecv) return;
          std::byte* at = server_memory.data() + completion.wr_id * 1024;
          const fabric::SgEntry entry{at, completion.length, server_lkey};
          (void)self.PostSend(std::span(&entry, 1));
          (void)self.PostRecv(at, 1024, server_lkey, completion.wr_id);
        });
        accepted = std::move(endpoint);
        return Status::Ok();
      });
  ASSERT_TRUE(listening.ok());
  std::atomic<uint64_t> answers{0};
  auto endpoint = std::move(client->Connect(*listening, {})).value();
  for (int i = 0; i < 4; ++i) {
    (void)endpoint->PostRecv(client_memory.data() + i * 1024, 1024, client_lkey, i);
  }
  endpoint->Start([&](fabric::Endpoint& self, const fabric::Completion& completion) {
    if (completion.kind != fabric::CompletionKind::kRecv) return;
    (void)self.PostRecv(client_memory.data() + completion.wr_id * 1024, 1024, client_lkey,
                        completion.wr_id);
    answers.fetch_add(1, std::memory_order_release);
  });
  std::vector<double> samples;
  const fabric::SgEntry entry{client_memory.data() + 8192, kBytes, client_lkey};
  for (int i = 0; i < 20000; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(endpoint->PostSend(std::span(&entry, 1)).ok());
    while (answers.load(std::memory_order_acquire) != static_cast<uint64_t>(i + 1)) {
    }
    samples.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(samples.begin(), samples.end());
  std::printf("fabric %s polling %s: 100 B round trip p50 %.2f us, p99 %.2f us\n",
              testing::FabricName({kind, 0}).c_str(),
              polling == PollingMode::kBusy ? "busy" : "event", samples[samples.size() / 2],
              samples[samples.size() * 99 / 100]);
  endpoint->Close(Status::Cancelled("done"));
  client->Shutdown();
  server->Shutdown();
}

INSTANTIATE_TEST_SUITE_P(Fabrics, FabricRoundTrip,
                         ::testing::Combine(::testing::Values(FabricKind::kTcp, FabricKind::kShm),
                                            ::testing::Values(PollingMode::kBusy,
                                                              PollingMode::kEvent)));

}  // namespace
}  // namespace artune::transport