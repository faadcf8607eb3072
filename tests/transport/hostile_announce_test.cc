// A hostile peer announcing more than it lets the server read (issue 26, item 2):
// the server allocates destinations as it reads them, a window at a time, and
// drops a connection whose announced slices are not read within timeout_ms, which
// gives their memory back.
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "allocator.h"
#include "connection.h"
#include "hostile_test_util.h"

namespace artune::transport {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * kKiB;

class HostileAnnounceTest : public HostileTest {
 protected:
  // Announces call 1 to "echo": `slices` slices of `slice_bytes` each, at
  // addresses this peer never serves, in as few packets as the eager buffers hold.
  void Announce(int fd, uint32_t slices, uint64_t slice_bytes) {
    const uint64_t buffer_bytes = EagerBufferBytes(Config{});
    const uint32_t room = static_cast<uint32_t>((buffer_bytes - sizeof(wire::PacketHeader) - 4) /
                                                sizeof(wire::RendezvousEntry));
    for (uint32_t next = 0; next < slices;) {
      const uint32_t count = std::min(room, slices - next);
      const bool first = next == 0;
      wire::PacketHeader packet = RequestPacket(wire::PacketKind::kAnnounce, 1, first ? 4 : 0);
      packet.slice_count = slices;
      packet.entry_count = count;
      packet.method_bytes = first ? 4 : 0;
      std::vector<std::byte> body(count * sizeof(wire::RendezvousEntry) + (first ? 4 : 0));
      for (uint32_t i = 0; i < count; ++i) {
        wire::RendezvousEntry entry{};
        entry.slice_index = next + i;
        entry.rkey = 1;
        entry.remote_addr = 0x10000000 + (next + i) * slice_bytes;
        entry.length = slice_bytes;
        entry.chunk_bytes = slice_bytes;
        std::memcpy(body.data() + i * sizeof(entry), &entry, sizeof(entry));
      }
      if (first) std::memcpy(body.data() + count * sizeof(wire::RendezvousEntry), "echo", 4);
      SendPacket(fd, packet, body.data(), body.size());
      next += count;
    }
  }

  // Reads frames until the eager response to `call_id`; counts the read requests
  // on the way. False if the server closed the connection first.
  static bool AwaitResponse(int fd, uint64_t call_id, size_t& read_requests) {
    for (int frames = 0; frames < 100000; ++frames) {
      wire::FrameHeader header{};
      std::vector<std::byte> frame;
      if (!ReadFrame(fd, header, frame)) return false;
      if (header.kind == static_cast<uint8_t>(wire::FrameKind::kReadRequest)) ++read_requests;
      if (header.kind != static_cast<uint8_t>(wire::FrameKind::kSend) ||
          frame.size() < sizeof(wire::PacketHeader)) {
        continue;
      }
      wire::PacketHeader got;
      std::memcpy(&got, frame.data(), sizeof(got));
      if (got.call_id == call_id && got.kind == static_cast<uint8_t>(wire::PacketKind::kEager)) {
        return true;
      }
    }
    return false;
  }
};

// Before: the server allocated all 256 MiB the moment they were announced, and
// held them for as long as the peer kept the connection open.
TEST_F(HostileAnnounceTest, AnnouncedSlicesAreAllocatedAWindowAtATimeAndFreedWhenLate) {
  auto& allocator = dynamic_cast<RegisteredAllocator&>(server_->allocator());
  Config config = server_->config();
  config.timeout_ms = 1000;
  ASSERT_TRUE(server_->Reconfigure(config).ok());
  const uint64_t before = allocator.bytes_in_use();

  int fd = ConnectRaw();
  SendHello(fd);
  constexpr uint32_t kSlices = 1024;
  constexpr uint64_t kSliceBytes = 256 * kKiB;  // 256 MiB in all
  Announce(fd, kSlices, kSliceBytes);
  // The server handles a connection's packets in order: once call 2 is answered,
  // every announce before it was handled.
  SendEagerCall(fd, 2, "echo");
  size_t read_requests = 0;
  ASSERT_TRUE(AwaitResponse(fd, 2, read_requests)) << "the server closed the connection";
  const uint64_t held = allocator.bytes_in_use() - before;
  const uint64_t pools = 2 * EagerBufferBytes(Config{}) * (Config{}.eager_buffer_count + 1);
  EXPECT_LE(held, kReadWindowBytes + pools)
      << "destinations of slices not being read were allocated";

  // The peer never answers the reads: after timeout_ms the server drops it.
  EXPECT_TRUE(DroppedByServer(fd)) << "an unread announce held the connection open";
  ::close(fd);
  uint64_t in_use = allocator.bytes_in_use();
  for (int i = 0; i < 500 && in_use > before + pools; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    in_use = allocator.bytes_in_use();
  }
  EXPECT_LE(in_use, before + pools) << "the unread slices' memory was not given back";

  ExpectOthersStillServed();
  auto payload = testing::MakePayload({512 * kKiB, 4 * kMiB}, 5);
  Result<Message> response = client_->Call("echo", testing::Views(payload));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_TRUE(testing::SameSlices(*response, payload));
}

}  // namespace
}  // namespace artune::transport
