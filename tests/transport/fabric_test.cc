// The fabric interface directly, per fabric: two-sided sends into posted buffers,
// one-sided reads of a registered region, and the failures the protocol layer relies
// on: a read with a key the peer never registered fails naming the verb and status
// (verbs: the remote access error breaks the queue pair, kDisconnected follows;
// tcp: the emulated read is refused and the connection lives on), and Close fails
// the pending work and ends with exactly one kDisconnected.
#include "fabric/fabric.h"

#include <gmock/gmock.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "completions_util.h"
#include "engine_test_util.h"

namespace artune::transport {
namespace {

using testing::Completions;
using ::testing::HasSubstr;

class FabricTest : public ::testing::TestWithParam<FabricKind> {
 protected:
  static constexpr size_t kBufferBytes = 64 * 1024;
  static constexpr int kBuffers = 4;

  void SetUp() override {
    ARTUNE_SKIP_UNLESS_FABRIC_USABLE(GetParam());
    const Config config = testing::TestConfig(GetParam());
    auto server = fabric::MakeFabric(GetParam(), config);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    auto client = fabric::MakeFabric(GetParam(), config);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    server_memory_.assign(kBuffers * kBufferBytes, std::byte{0});
    client_memory_.assign(kBuffers * kBufferBytes, std::byte{0});
    auto server_keys = server_->Register(server_memory_.data(), server_memory_.size());
    auto client_keys = client_->Register(client_memory_.data(), client_memory_.size());
    ASSERT_TRUE(server_keys.ok() && client_keys.ok());
    server_keys_ = *server_keys;
    client_keys_ = *client_keys;

    std::string host = testing::TestListenAddress(GetParam());
    host = host.substr(0, host.rfind(':'));
    auto listening = server_->Listen(
        host, [this](std::shared_ptr<fabric::Endpoint> endpoint, std::span<const std::byte> data) {
          for (int i = 0; i < kBuffers; ++i) {
            ARTUNE_RETURN_IF_ERROR(endpoint->PostRecv(server_memory_.data() + i * kBufferBytes,
                                                      kBufferBytes, server_keys_.lkey, i));
          }
          endpoint->Start(server_completions_.Handler());
          std::lock_guard lock(accepted_mutex_);
          accepted_private_.assign(data.begin(), data.end());
          accepted_ = std::move(endpoint);
          accepted_changed_.notify_all();
          return Status::Ok();
        });
    ASSERT_TRUE(listening.ok()) << listening.status().ToString();
    listening_ = *listening;
    const std::byte hello[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
    auto endpoint = client_->Connect(*listening, hello);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
    endpoint_ = std::move(endpoint).value();
    endpoint_->Start(client_completions_.Handler());
  }
  void TearDown() override {
    endpoint_.reset();
    other_.reset();
    if (client_) client_->Shutdown();
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<fabric::Fabric> server_, client_;
  std::vector<std::byte> server_memory_, client_memory_;
  fabric::MemoryKeys server_keys_, client_keys_;
  Completions server_completions_, client_completions_;
  // The accept callback runs on the server fabric's own thread, possibly after
  // Connect has returned on the client: tests wait for it before looking.
  bool WaitForAccepted() {
    std::unique_lock lock(accepted_mutex_);
    return accepted_changed_.wait_for(lock, std::chrono::seconds(30),
                                      [this] { return accepted_ != nullptr; });
  }

  std::shared_ptr<fabric::Endpoint> accepted() {
    std::lock_guard lock(accepted_mutex_);
    return accepted_;
  }
  // Closes the client's connection and opens a new one (accepted() becomes its
  // server side); completions of the old one are drained first.
  bool Reconnect() {
    endpoint_->Close(Status::Cancelled("test reconnects"));
    while (client_completions_.Next().kind != fabric::CompletionKind::kDisconnected) {
    }
    {
      std::lock_guard lock(accepted_mutex_);
      accepted_.reset();
    }
    const std::byte hello[1] = {std::byte{4}};
    auto endpoint = client_->Connect(listening_, hello);
    if (!endpoint.ok()) return false;
    endpoint_ = std::move(endpoint).value();
    endpoint_->Start(client_completions_.Handler());
    return WaitForAccepted();
  }

  std::string listening_;
  // A second client connection, for tests that need one; its completions outlive it
  // (the fabric may deliver until TearDown shuts it down).
  std::shared_ptr<fabric::Endpoint> other_;
  Completions other_completions_;
  std::mutex accepted_mutex_;
  std::condition_variable accepted_changed_;
  std::shared_ptr<fabric::Endpoint> accepted_;
  std::vector<std::byte> accepted_private_;
  std::shared_ptr<fabric::Endpoint> endpoint_;
};

TEST_P(FabricTest, SendsLandInPostedBuffersAndReadsCopyRegisteredMemory) {
  ASSERT_TRUE(WaitForAccepted()) << "the server never accepted the connection";
  {
    std::lock_guard lock(accepted_mutex_);
    EXPECT_EQ(accepted_private_.size(), 3u);  // exactly what the client sent, no padding
  }
  // Inline-sized, ring-sized and buffer-sized sends, in order.
  const std::vector<size_t> sizes = {16, 8 * 1024, kBufferBytes};
  auto payload = testing::MakePayload(sizes, 7);
  for (const auto& message : payload) {
    fabric::SgEntry entry{message.data(), message.size(), 0};
    ASSERT_TRUE(endpoint_->PostSend(std::span(&entry, 1)).ok());
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    fabric::Completion completion = server_completions_.Next();
    ASSERT_EQ(completion.kind, fabric::CompletionKind::kRecv) << completion.status.ToString();
    EXPECT_EQ(completion.wr_id, i);
    ASSERT_EQ(completion.length, sizes[i]);
    EXPECT_EQ(std::memcmp(server_memory_.data() + i * kBufferBytes, payload[i].data(), sizes[i]),
              0);
  }
  // The server offers the last buffer; the client reads it back.
  std::byte* offered = server_memory_.data() + 2 * kBufferBytes;
  auto key = accepted()->Expose(offered, kBufferBytes, server_keys_.lkey);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  const fabric::RemoteRegion remote{reinterpret_cast<uint64_t>(offered), *key, kBufferBytes};
  ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, 42).ok());
  fabric::Completion read = client_completions_.Next();
  ASSERT_EQ(read.kind, fabric::CompletionKind::kRead);
  EXPECT_EQ(read.wr_id, 42u);
  ASSERT_TRUE(read.status.ok()) << read.status.ToString();
  EXPECT_EQ(std::memcmp(client_memory_.data(), payload[2].data(), kBufferBytes), 0);
}

TEST_P(FabricTest, ReadWithAnUnknownKeyFailsNamingTheVerbAndStatus) {
  // The region's own rkey is no offer (with memory windows it grants nothing).
  const fabric::RemoteRegion remote{reinterpret_cast<uint64_t>(server_memory_.data()),
                                    server_keys_.rkey ^ 0x5a5a00u, 4096};
  ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, 9).ok());
  fabric::Completion read = client_completions_.Next();
  ASSERT_EQ(read.kind, fabric::CompletionKind::kRead) << read.status.ToString();
  EXPECT_EQ(read.wr_id, 9u);
  ASSERT_FALSE(read.status.ok());
  if (GetParam() == FabricKind::kVerbs) {
    EXPECT_THAT(read.status.message(), HasSubstr("RDMA READ completion failed"));
    EXPECT_THAT(read.status.message(), HasSubstr("IBV_WC_REM_ACCESS_ERR"));
    // The queue pair is broken: the endpoint ends, and posts fail from then on.
    fabric::Completion end = client_completions_.Next();
    EXPECT_EQ(end.kind, fabric::CompletionKind::kDisconnected);
    EXPECT_THAT(end.status.message(), HasSubstr("IBV_WC_REM_ACCESS_ERR"));
    fabric::SgEntry entry{client_memory_.data(), 8, 0};
    EXPECT_EQ(endpoint_->PostSend(std::span(&entry, 1)).code(), ErrorCode::kUnavailable);
  } else {
    EXPECT_THAT(read.status.message(), HasSubstr("not offered on this connection"));
  }
}

// What a hostile reader tries with an offer it saw (issue 16): read past its range,
// read it again after it was revoked, read it on another connection. Each fails,
// the same way whatever the reason (tcp: one refusal status; verbs: the HCA's
// remote access error, which breaks the reader's QP), and no byte comes back.
enum class Misuse { kPastTheRange, kAfterRevoke, kOnAnotherConnection };

TEST_P(FabricTest, AnOfferIsReadableOnlyInItsRangeUntilRevokedOnItsConnection) {
  ASSERT_TRUE(WaitForAccepted());
  auto payload = testing::MakePayload({4096}, 3);
  std::byte* offered = server_memory_.data() + 3 * kBufferBytes;
  std::memcpy(offered, payload[0].data(), 4096);
  const uint64_t offered_addr = reinterpret_cast<uint64_t>(offered);

  for (Misuse misuse :
       {Misuse::kPastTheRange, Misuse::kAfterRevoke, Misuse::kOnAnotherConnection}) {
    SCOPED_TRACE(static_cast<int>(misuse));
    // Soft-RoCE checks a read through a memory window against the region under it,
    // not the window's own bounds (rxe_resp.c, Linux 6.1); real HCAs check both.
    // transport.h and README state that limit.
    if (misuse == Misuse::kPastTheRange && GetParam() == FabricKind::kVerbs &&
        accepted()->peer().find("(rxe") != std::string::npos) {
      std::cout << "note: not checking a read past the offer: rxe does not bound window "
                   "reads by the window\n";
      continue;
    }
    // A fresh connection per misuse (a refused read breaks a verbs QP), with its own
    // offer of the same bytes; the legitimate read works first.
    if (misuse != Misuse::kPastTheRange) {
      ASSERT_TRUE(Reconnect());
    }
    auto fresh = accepted()->Expose(offered, 4096, server_keys_.lkey);
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    const fabric::RemoteRegion offer{offered_addr, *fresh, 4096};
    std::memset(client_memory_.data(), 0, 8192);
    ASSERT_TRUE(endpoint_->PostRead(offer, client_memory_.data(), client_keys_.lkey, 1).ok());
    fabric::Completion good = client_completions_.Next();
    ASSERT_EQ(good.kind, fabric::CompletionKind::kRead) << good.status.ToString();
    ASSERT_TRUE(good.status.ok()) << good.status.ToString();
    ASSERT_EQ(std::memcmp(client_memory_.data(), payload[0].data(), 4096), 0);

    std::memset(client_memory_.data(), 0, 8192);
    fabric::RemoteRegion bad = offer;
    std::shared_ptr<fabric::Endpoint> reader = endpoint_;
    Completions* reader_completions = &client_completions_;
    switch (misuse) {
      case Misuse::kPastTheRange:
        bad.length = 4096 + 1;
        break;
      case Misuse::kAfterRevoke: {
        // Reads fail once the revoke has taken effect (verbs: the invalidation
        // completed): the callback says when.
        auto revoked = std::make_shared<std::promise<void>>();
        accepted()->Revoke(*fresh, [revoked] { revoked->set_value(); });
        ASSERT_EQ(revoked->get_future().wait_for(std::chrono::seconds(30)),
                  std::future_status::ready);
      } break;
      case Misuse::kOnAnotherConnection: {
        const std::byte hello[1] = {std::byte{9}};
        auto connected = client_->Connect(listening_, hello);
        ASSERT_TRUE(connected.ok()) << connected.status().ToString();
        other_ = std::move(connected).value();
        other_->Start(other_completions_.Handler());
        reader = other_;
        reader_completions = &other_completions_;
        break;
      }
    }
    ASSERT_TRUE(reader->PostRead(bad, client_memory_.data(), client_keys_.lkey, 2).ok());
    fabric::Completion refused = reader_completions->Next();
    ASSERT_EQ(refused.kind, fabric::CompletionKind::kRead) << refused.status.ToString();
    EXPECT_FALSE(refused.status.ok());
    if (GetParam() == FabricKind::kVerbs) {
      EXPECT_THAT(refused.status.message(), HasSubstr("IBV_WC_REM_ACCESS_ERR"));
    } else {
      EXPECT_THAT(refused.status.message(), HasSubstr("not offered on this connection"));
    }
    const std::vector<std::byte> zeros(8192, std::byte{0});
    EXPECT_EQ(std::memcmp(client_memory_.data(), zeros.data(), zeros.size()), 0)
        << "a refused read wrote bytes";
  }
}

TEST_P(FabricTest, CloseFailsPendingReceivesAndDisconnectsOnce) {
  endpoint_->Close(Status::Cancelled("test closes"));
  fabric::Completion end = client_completions_.Next();
  EXPECT_EQ(end.kind, fabric::CompletionKind::kDisconnected);
  EXPECT_EQ(end.status.code(), ErrorCode::kCancelled) << end.status.ToString();
  // The server side learns too (verbs: RDMA_CM_EVENT_DISCONNECTED; tcp: end of stream).
  fabric::Completion server_end = server_completions_.Next();
  EXPECT_EQ(server_end.kind, fabric::CompletionKind::kDisconnected) << server_end.status.ToString();
  EXPECT_NE(server_end.status.code(), ErrorCode::kTimeout) << server_end.status.ToString();
  fabric::SgEntry entry{client_memory_.data(), 8, 0};
  EXPECT_EQ(endpoint_->PostSend(std::span(&entry, 1)).code(), ErrorCode::kUnavailable);
}

// Caller-driven progress (fabric.h): while a caller polls, the fabric's own thread
// stands aside and completions arrive on the polling thread, with no hand-off.
// The parked thread still runs a pass every so often (liveness, accepts), so one
// completion may land there: most, not all, must come to the caller. Every fabric
// has it (verbs too): a Poll that did nothing would leave them all to the thread.
TEST_P(FabricTest, APollingCallerTakesItsOwnCompletions) {
  ASSERT_TRUE(client_->caller_polling()) << "this fabric has no caller-driven progress";
  ASSERT_TRUE(WaitForAccepted()) << "the server never accepted the connection";
  client_->SetPolling(PollingMode::kBusy);
  std::byte* offered = server_memory_.data();
  auto key = accepted()->Expose(offered, kBufferBytes, server_keys_.lkey);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  const fabric::RemoteRegion remote{reinterpret_cast<uint64_t>(offered), *key, 4096};
  client_->BeginCallerPolling();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the thread parks
  constexpr int kReads = 20;
  int on_caller = 0;
  for (int i = 0; i < kReads; ++i) {
    ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, i).ok());
    std::optional<std::pair<fabric::Completion, std::thread::id>> done;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(done = client_completions_.TryNext()) && std::chrono::steady_clock::now() < give_up) {
      client_->Poll();
    }
    ASSERT_TRUE(done.has_value()) << "read " << i << " never completed";
    ASSERT_EQ(done->first.kind, fabric::CompletionKind::kRead) << done->first.status.ToString();
    ASSERT_TRUE(done->first.status.ok()) << done->first.status.ToString();
    if (done->second == std::this_thread::get_id()) ++on_caller;
  }
  // The caller leaves with nothing pending: the fabric's thread is not woken
  // (EndCallerPolling(false)) yet must notice within kParkRecheckLongest and deliver a
  // read nobody polls for.
  client_->EndCallerPolling(false);
  ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, kReads).ok());
  std::optional<std::pair<fabric::Completion, std::thread::id>> after;
  for (int i = 0; i < 10'000 && !(after = client_completions_.TryNext()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(after.has_value()) << "after the caller left, nobody delivered the read";
  EXPECT_EQ(after->first.kind, fabric::CompletionKind::kRead);
  EXPECT_NE(after->second, std::this_thread::get_id());
  EXPECT_GE(on_caller, kReads / 2)
      << "only " << on_caller << " of " << kReads << " completions came to the polling caller";
}

// More small sends than the send queue holds (verbs: 512), one at a time: with
// selective signalling most complete unsignalled, and their slots must come back
// with a later completion, or the queue fills and the sends stall. The trailing
// unsignalled sends must not hold up the end either: Close still disconnects.
TEST_P(FabricTest, ManySmallSendsKeepFlowingAndCloseStillDisconnects) {
  ASSERT_TRUE(WaitForAccepted()) << "the server never accepted the connection";
  constexpr int kSends = 700;
  for (int i = 0; i < kSends; ++i) {
    const uint64_t word = 0x5eed0000u + i;
    fabric::SgEntry entry{reinterpret_cast<const std::byte*>(&word), sizeof(word), 0};
    ASSERT_TRUE(endpoint_->PostSend(std::span(&entry, 1)).ok()) << "send " << i;
    fabric::Completion got = server_completions_.Next();
    ASSERT_EQ(got.kind, fabric::CompletionKind::kRecv)
        << "send " << i << " never arrived: " << got.status.ToString();
    ASSERT_EQ(got.length, sizeof(word));
    std::byte* buffer = server_memory_.data() + got.wr_id * kBufferBytes;
    uint64_t landed = 0;
    std::memcpy(&landed, buffer, sizeof(landed));
    ASSERT_EQ(landed, word) << "send " << i;
    ASSERT_TRUE(accepted()->PostRecv(buffer, kBufferBytes, server_keys_.lkey, got.wr_id).ok());
  }
  endpoint_->Close(Status::Cancelled("test closes"));
  fabric::Completion end = client_completions_.Next();
  EXPECT_EQ(end.kind, fabric::CompletionKind::kDisconnected);
  EXPECT_EQ(end.status.code(), ErrorCode::kCancelled) << end.status.ToString();
}

// Event polling's caller-driven progress (WaitPass): the caller sleeps in the
// fabric's own wait and takes its completion itself. A wait with nothing to come
// sleeps its whole timeout (a bound from below, so load cannot fail it; a pass
// that only polled would return at once), and a finished flag set beforehand makes
// it return at once. Fabrics without it (caller_waiting false) do nothing in it.
TEST_P(FabricTest, AWaitingCallerSleepsInTheFabricAndTakesItsCompletion) {
  ASSERT_TRUE(WaitForAccepted()) << "the server never accepted the connection";
  client_->SetPolling(PollingMode::kEvent);
  std::byte* offered = server_memory_.data();
  auto key = accepted()->Expose(offered, kBufferBytes, server_keys_.lkey);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  const fabric::RemoteRegion remote{reinterpret_cast<uint64_t>(offered), *key, 4096};
  std::atomic<bool> finished{false};
  if (!client_->caller_waiting()) {
    EXPECT_FALSE(client_->WaitPass(50, finished));
    return;
  }
  client_->BeginCallerPolling();
  const auto before = std::chrono::steady_clock::now();
  for (int i = 0;
       i < 100 && std::chrono::steady_clock::now() - before < std::chrono::milliseconds(50); ++i) {
    // The progress thread may still hold the pass while it parks: then no pass.
    if (!client_->WaitPass(50, finished))
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(50))
      << "WaitPass returned at once 100 times with nothing to wait for";
  constexpr int kReads = 10;
  int on_caller = 0;
  for (int i = 0; i < kReads; ++i) {
    ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, i).ok());
    std::optional<std::pair<fabric::Completion, std::thread::id>> done;
    for (int pass = 0; pass < 1000 && !(done = client_completions_.TryNext()); ++pass) {
      if (!client_->WaitPass(10, finished)) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    ASSERT_TRUE(done.has_value()) << "read " << i << " never completed";
    ASSERT_EQ(done->first.kind, fabric::CompletionKind::kRead) << done->first.status.ToString();
    if (done->second == std::this_thread::get_id()) ++on_caller;
  }
  finished = true;
  const auto quick = std::chrono::steady_clock::now();
  EXPECT_FALSE(client_->WaitPass(5000, finished));
  EXPECT_LT(std::chrono::steady_clock::now() - quick, std::chrono::seconds(4))
      << "a finished caller still slept in WaitPass";
  client_->EndCallerPolling(false);
  EXPECT_GE(on_caller, kReads / 2)
      << "only " << on_caller << " of " << kReads << " completions came to the waiting caller";
}

INSTANTIATE_TEST_SUITE_P(Fabrics, FabricTest, ::testing::ValuesIn(testing::TestFabrics()),
                         testing::FabricName);

}  // namespace
}  // namespace artune::transport
