// libFuzzer target: the engine's receive path (Connection) fed by a hostile peer.
// A fake endpoint stands in for the fabric, so every byte of every received
// packet and every completed read comes from the input. The connection must
// never crash, read or write outside its buffers (ASan), or run a call's
// completion twice; whatever it decides, it may only drop the connection.
//
// Input: byte 0 picks the role (client or server); then records of
// [op u8][length u16 little-endian][bytes]: op % 4 == 0 delivers a packet into the next posted
// receive buffer, 1 completes the oldest pending read (data or an error), 2 starts
// a call (client: payload size from the bytes) and 3 disconnects.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>

#include "allocator.h"
#include "connection.h"
#include "fabric/fabric.h"
#include "stats.h"

namespace artune::transport {
namespace {

class FakeFabric final : public fabric::Fabric {
 public:
  FabricKind kind() const override { return FabricKind::kTcp; }
  Result<fabric::MemoryKeys> Register(std::byte*, uint64_t length) override {
    if (length == 0) return Status::InvalidArgument("empty");
    ++next_key_;
    return fabric::MemoryKeys{next_key_, next_key_};
  }
  void Deregister(const fabric::MemoryKeys&) override {}
  Result<std::string> Listen(const std::string&, fabric::AcceptHandler) override {
    return Status::Unsupported("fake");
  }
  Result<std::shared_ptr<fabric::Endpoint>> Connect(const std::string&,
                                                    std::span<const std::byte>) override {
    return Status::Unsupported("fake");
  }
  void SetPolling(PollingMode) override {}
  void Shutdown() override {}

 private:
  uint32_t next_key_ = 0;
};

struct PostedRecv {
  std::byte* addr;
  uint64_t length;
  uint64_t wr_id;
};
struct PendingRead {
  fabric::RemoteRegion remote;
  std::byte* local;
  uint64_t wr_id;
};

// Completions are queued and delivered by the fuzz loop, never from inside a
// post (the connection holds its lock there), as a real progress thread does.
class FakeEndpoint final : public fabric::Endpoint {
 public:
  void Start(fabric::CompletionHandler handler) override { handler_ = std::move(handler); }
  Status PostSend(std::span<const fabric::SgEntry> sgl) override {
    if (closed_) return Status::Unavailable("closed");
    for (const fabric::SgEntry& entry : sgl) {
      // Touch every byte: a send of memory the connection does not own is an ASan report.
      for (uint64_t i = 0; i < entry.length; ++i) checksum_ += static_cast<uint8_t>(entry.addr[i]);
    }
    return Status::Ok();
  }
  Status PostRecv(std::byte* addr, uint64_t length, uint32_t, uint64_t wr_id) override {
    if (closed_) return Status::Unavailable("closed");
    recvs_.push_back({addr, length, wr_id});
    return Status::Ok();
  }
  Result<uint32_t> Expose(const std::byte*, uint64_t, uint32_t) override {
    if (closed_) return Status::Unavailable("closed");
    return ++next_offer_;
  }
  void Revoke(uint32_t, std::function<void()> revoked) override { revoked(); }
  Status PostRead(const fabric::RemoteRegion& remote, std::byte* local, uint32_t,
                  uint64_t wr_id) override {
    if (closed_) return Status::Unavailable("closed");
    reads_.push_back({remote, local, wr_id});
    return Status::Ok();
  }
  void Close(Status why) override {
    if (closed_) return;
    closed_ = true;
    close_reason_ = std::move(why);
  }
  std::string peer() const override { return "fuzz-peer"; }

  // Delivers one packet into the next posted buffer (as the fabric would).
  void DeliverPacket(const uint8_t* data, size_t size) {
    if (closed_ || recvs_.empty() || !handler_) return;
    const PostedRecv recv = recvs_.front();
    recvs_.pop_front();
    const size_t length = std::min<uint64_t>(size, recv.length);
    std::memcpy(recv.addr, data, length);
    handler_(*this, {fabric::CompletionKind::kRecv, recv.wr_id, length, Status::Ok()});
  }
  // Completes the oldest read with `data` repeated, or with an error.
  void CompleteRead(const uint8_t* data, size_t size) {
    if (reads_.empty() || !handler_) return;
    const PendingRead read = reads_.front();
    reads_.pop_front();
    const bool fail = size == 0 || (data[0] & 1) != 0;
    if (!fail) {
      for (uint64_t i = 0; i < read.remote.length; ++i) read.local[i] = std::byte{data[i % size]};
    }
    handler_(*this, {fabric::CompletionKind::kRead, read.wr_id, fail ? 0 : read.remote.length,
                     fail ? Status::IoError("fuzz: read failed") : Status::Ok()});
  }
  // What a fabric does after Close (or a lost peer): fail every pending read,
  // then kDisconnected, once.
  void Disconnect() {
    if (disconnected_ || !handler_) return;
    closed_ = true;
    while (!reads_.empty()) {
      const PendingRead read = reads_.front();
      reads_.pop_front();
      handler_(*this, {fabric::CompletionKind::kRead, read.wr_id, 0, Status::Unavailable("gone")});
    }
    recvs_.clear();
    disconnected_ = true;
    handler_(*this, {fabric::CompletionKind::kDisconnected, 0, 0,
                     close_reason_.ok() ? Status::Unavailable("fuzz: peer gone") : close_reason_});
  }
  bool closed() const { return closed_; }

 private:
  fabric::CompletionHandler handler_;
  std::deque<PostedRecv> recvs_;
  std::deque<PendingRead> reads_;
  uint32_t next_offer_ = 0;
  bool closed_ = false;
  bool disconnected_ = false;
  Status close_reason_;
  uint64_t checksum_ = 0;
};

}  // namespace
}  // namespace artune::transport

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace artune;
  using namespace artune::transport;
  if (size < 1) return 0;
  const Role role = (data[0] & 1) != 0 ? Role::kServer : Role::kClient;
  ++data;
  --size;

  auto fake_fabric = std::make_shared<FakeFabric>();
  RegisteredAllocator allocator(fake_fabric, uint64_t{64} << 20);
  StatsRecorder stats;
  Config config;
  Geometry geometry;
  geometry.buffer_bytes = 8192;
  geometry.buffer_count = 4;
  geometry.max_outstanding = 4;
  auto endpoint = std::make_shared<FakeEndpoint>();
  // Server role: every request is answered at once with its own slices.
  std::shared_ptr<Connection> connection = std::make_shared<Connection>(
      role, endpoint, allocator, stats, geometry, config, 1, nullptr,
      [](std::shared_ptr<Connection> self, IncomingRequest request) {
        self->SendResponse(request.call_id, Status::Ok(), request.message->slices(), {},
                           request.message);
      },
      nullptr);
  if (!connection->Start().ok()) abort();

  int calls_started = 0;
  auto calls_done = std::make_shared<int>(0);
  std::vector<std::byte> payload(256 * 1024, std::byte{0x5a});
  while (size >= 3) {
    const uint8_t op = data[0];
    const size_t length = std::min<size_t>(data[1] | (size_t{data[2]} << 8), size - 3);
    const uint8_t* body = data + 3;
    data += 3 + length;
    size -= 3 + length;
    switch (op % 4) {
      case 0:
        endpoint->DeliverPacket(body, length);
        break;
      case 1:
        endpoint->CompleteRead(body, length);
        break;
      case 2: {
        if (role != Role::kClient || calls_started >= 16) break;
        const size_t bytes = length == 0 ? 1 : (size_t{body[0]} << 10) + length;
        const ConstSlice slice(payload.data(), std::min(bytes, payload.size()));
        ++calls_started;
        connection->StartCall("/fuzz/Echo", {&slice, 1},
                              std::chrono::steady_clock::now() + std::chrono::hours(1),
                              [calls_done](Result<Message>) { ++*calls_done; });
        break;
      }
      case 3:
        endpoint->Disconnect();
        break;
    }
    if (endpoint->closed()) endpoint->Disconnect();
  }
  connection->Close(Status::Cancelled("fuzz: end of input"));
  endpoint->Disconnect();
  // Every call ends exactly once, whatever the peer did.
  if (*calls_done != calls_started) abort();
  return 0;
}
