// Test helpers for the shm fabric's suites (shm_test.cc, shm_offers_test.cc): a
// connected pair of shm fabrics in this process whose client side can play a
// hostile peer through its mapping of the segment.
#pragma once

#include <gmock/gmock.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "completions_util.h"
#include "engine_test_util.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_doorbell.h"
#include "fabric/shm/shm_fabric.h"

namespace artune::transport::testing {

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

// A connected pair of shm fabrics in this process; the client's side plays the
// hostile peer where a test says so.
class ShmPair {
 public:
  static constexpr size_t kBufferBytes = 2 * 1024 * 1024;
  static constexpr int kBuffers = 4;

  void Open() {
    server_completions_.Clear();
    client_completions_.Clear();
    const Config config = testing::TestConfig(FabricKind::kShm);
    server_ = std::move(fabric::MakeFabric(FabricKind::kShm, config)).value();
    client_ = std::move(fabric::MakeFabric(FabricKind::kShm, config)).value();
    server_memory_.assign(kBuffers * kBufferBytes, std::byte{0});
    client_memory_.assign(kBuffers * kBufferBytes, std::byte{0});
    server_keys_ = *server_->Register(server_memory_.data(), server_memory_.size());
    client_keys_ = *client_->Register(client_memory_.data(), client_memory_.size());
    auto listening = server_->Listen("127.0.0.1", [this](std::shared_ptr<fabric::Endpoint> endpoint,
                                                         std::span<const std::byte>) {
      for (int i = 0; i < kBuffers; ++i) {
        ARTUNE_RETURN_IF_ERROR(endpoint->PostRecv(server_memory_.data() + i * kBufferBytes,
                                                  kBufferBytes, server_keys_.lkey, i));
      }
      endpoint->Start(server_completions_.Handler());
      std::lock_guard lock(mutex_);
      accepted_ = std::move(endpoint);
      changed_.notify_all();
      return Status::Ok();
    });
    ASSERT_TRUE(listening.ok()) << listening.status().ToString();
    EXPECT_THAT(*listening, ::testing::StartsWith("shm:@artune-shm-"));
    auto endpoint = client_->Connect(*listening, {});
    ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
    endpoint_ = std::move(endpoint).value();
    endpoint_->Start(client_completions_.Handler());
    std::unique_lock lock(mutex_);
    ASSERT_TRUE(
        changed_.wait_for(lock, std::chrono::seconds(30), [&] { return accepted_ != nullptr; }));
  }
  void Close() {
    endpoint_.reset();
    accepted_.reset();
    if (client_) client_->Shutdown();
    if (server_) server_->Shutdown();
  }
  // The client's mapping of the segment: what a hostile client can write.
  fabric::shm::SegmentControl* Segment() {
    auto* shm = dynamic_cast<fabric::shm::ShmEndpoint*>(endpoint_.get());
    return static_cast<fabric::shm::SegmentControl*>(shm->link().segment);
  }
  // Wakes the server's progress thread as a send would, without writing a record.
  void WakeServer() {
    auto* shm = dynamic_cast<fabric::shm::ShmEndpoint*>(endpoint_.get());
    ASSERT_NE(fabric::shm::RingDoorbell(shm->link().doorbell), fabric::shm::RingResult::kPeerGone);
  }
  std::byte* ServerBoundData() {
    return reinterpret_cast<std::byte*>(Segment()) + fabric::shm::kDataOffset;
  }
  // Offers 1 MiB + 3 of the server's memory and reads it into the client's.
  void ReadOffer(uint64_t length) {
    auto payload = testing::MakePayload({length}, 7);
    std::memcpy(server_memory_.data(), payload[0].data(), length);
    auto key = accepted_->Expose(server_memory_.data(), length, server_keys_.lkey);
    ASSERT_TRUE(key.ok());
    const fabric::RemoteRegion remote{reinterpret_cast<uint64_t>(server_memory_.data()), *key,
                                      length};
    ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, 5).ok());
    fabric::Completion read = client_completions_.Next();
    ASSERT_EQ(read.kind, fabric::CompletionKind::kRead) << read.status.ToString();
    ASSERT_TRUE(read.status.ok()) << read.status.ToString();
    EXPECT_EQ(std::memcmp(client_memory_.data(), payload[0].data(), length), 0);
    // Past the offer: refused on the fallback path too, and nothing written.
    std::memset(client_memory_.data(), 0, length + 1);
    fabric::RemoteRegion past = remote;
    past.length = length + 1;
    ASSERT_TRUE(endpoint_->PostRead(past, client_memory_.data(), client_keys_.lkey, 6).ok());
    fabric::Completion refused = client_completions_.Next();
    ASSERT_EQ(refused.kind, fabric::CompletionKind::kRead);
    EXPECT_THAT(refused.status.message(), ::testing::HasSubstr("not offered on this connection"));
    EXPECT_EQ(client_memory_[0], std::byte{0});
  }
  // The server side's end: dropped for breaking the protocol.
  void ExpectServerDropsTheConnection() {
    fabric::Completion end = server_completions_.Next();
    while (end.kind == fabric::CompletionKind::kRecv) end = server_completions_.Next();
    EXPECT_EQ(end.kind, fabric::CompletionKind::kDisconnected);
    EXPECT_EQ(end.status.code(), ErrorCode::kProtocolError) << end.status.ToString();
  }

  std::unique_ptr<fabric::Fabric> server_, client_;
  std::vector<std::byte> server_memory_, client_memory_;
  fabric::MemoryKeys server_keys_, client_keys_;
  Completions server_completions_, client_completions_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<fabric::Endpoint> accepted_;
  std::shared_ptr<fabric::Endpoint> endpoint_;
};

}  // namespace artune::transport::testing
