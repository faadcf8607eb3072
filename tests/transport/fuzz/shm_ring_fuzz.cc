// libFuzzer target: the shm fabric's inbound ring, written by a hostile peer. The
// fabric listens once; each input is one connection whose server-bound ring gets
// the input's bytes as records (from position 0) and, from the input's first 8
// bytes, the producer position the peer claims (hostile or not). The accepted
// endpoint has receive buffers posted and one offer exposed, so sends and read
// requests have something to hit; grants, data and refusals name no read of its
// own (it posts none: the client endpoint would answer into the very ring the
// input is written to). The server must drop a bad peer (or consume a good one) and
// never crash or touch memory it does not own (ASan).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "fabric/fabric.h"
#include "fabric/shm/shm_doorbell.h"
#include "fabric/shm/shm_fabric.h"

namespace {

using namespace artune;
using namespace artune::transport;

constexpr uint64_t kRegionBytes = 1 << 20;
constexpr uint64_t kRecvBytes = 8192;
constexpr int kRecvBuffers = 4;

struct Pair {
  std::unique_ptr<fabric::Fabric> server, client;
  std::vector<std::byte> region = std::vector<std::byte>(kRegionBytes);
  fabric::MemoryKeys keys;
  std::string address;
  std::atomic<int> disconnected{0};
};

Pair& ThePair() {
  static Pair* pair = [] {
    auto* made = new Pair;
    Config config;
    config.polling = PollingMode::kEvent;
    made->server = fabric::MakeFabric(FabricKind::kShm, config).value();
    made->client = fabric::MakeFabric(FabricKind::kShm, config).value();
    made->keys = *made->server->Register(made->region.data(), kRegionBytes);
    auto address = made->server->Listen(
        "127.0.0.1", [made](std::shared_ptr<fabric::Endpoint> e, std::span<const std::byte>) {
          std::byte* base = made->region.data();
          for (int i = 0; i < kRecvBuffers; ++i) {
            ARTUNE_RETURN_IF_ERROR(e->PostRecv(base + i * kRecvBytes, kRecvBytes, made->keys.lkey,
                                               static_cast<uint64_t>(i)));
          }
          ARTUNE_RETURN_IF_ERROR(e->Expose(base + 64 * 1024, 4096, made->keys.lkey).status());
          e->Start([made, base](fabric::Endpoint& self, const fabric::Completion& done) {
            if (done.kind == fabric::CompletionKind::kRecv && done.status.ok()) {
              (void)self.PostRecv(base + done.wr_id * kRecvBytes, kRecvBytes, made->keys.lkey,
                                  done.wr_id);
            } else if (done.kind == fabric::CompletionKind::kDisconnected) {
              made->disconnected.fetch_add(1);
            }
          });
          return Status::Ok();
        });
    if (!address.ok()) abort();
    made->address = *address;
    return made;
  }();
  return *pair;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  Pair& pair = ThePair();
  const int before = pair.disconnected.load();
  auto connected = pair.client->Connect(pair.address, {});
  if (!connected.ok()) abort();
  std::shared_ptr<fabric::Endpoint> endpoint = std::move(connected).value();
  // Started, so that Close tears it down (and its segment goes) like any other.
  endpoint->Start([](fabric::Endpoint&, const fabric::Completion&) {});
  auto* shm = dynamic_cast<fabric::shm::ShmEndpoint*>(endpoint.get());
  auto* segment = static_cast<fabric::shm::SegmentControl*>(shm->link().segment);
  auto* ring = static_cast<std::byte*>(shm->link().segment) + fabric::shm::kDataOffset;
  uint64_t head = 0;
  std::memcpy(&head, data, sizeof(head));
  const size_t body = std::min<size_t>(size - 8, fabric::shm::kRingBytes);
  std::memcpy(ring, data + 8, body);
  // Mostly a position that covers the bytes given, sometimes the raw claim.
  if ((head & 1) == 0) head = body;
  segment->rings[0].head.store(head);
  (void)fabric::shm::RingDoorbell(shm->link().doorbell);
  // Done when the server consumed what was claimed or dropped the connection.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (segment->rings[0].tail.load() != head && pair.disconnected.load() == before) {
    if (std::chrono::steady_clock::now() > deadline) abort();  // neither consumed nor dropped
    std::this_thread::yield();
  }
  endpoint->Close(Status::Cancelled("input done"));
  endpoint.reset();
  while (pair.disconnected.load() == before) {
    if (std::chrono::steady_clock::now() > deadline) abort();
    std::this_thread::yield();
  }
  return 0;
}
