// A hostile peer reading over the tcp data port: reads outside what it was
// offered are refused, offers end at FIN, and a peer that floods read requests
// while reading nothing is dropped (a slow but well-behaved reader is not).
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "hostile_test_util.h"

namespace artune::transport {
namespace {

TEST_F(HostileTest, ReadsOutsideRegisteredMemoryAreRefused) {
  int fd = ConnectRaw();
  SendHello(fd);
  wire::ReadRequestBody request{};
  request.remote_addr = 0x1000;
  request.length = 4096;
  request.rkey = 0xFFFF'FFF0;  // no such key
  wire::FrameHeader header = Frame(wire::FrameKind::kReadRequest, sizeof(request), 42);
  SendBytes(fd, &header, sizeof(header));
  SendBytes(fd, &request, sizeof(request));
  wire::FrameHeader answer{};
  ASSERT_EQ(::recv(fd, &answer, sizeof(answer), MSG_WAITALL), static_cast<ssize_t>(sizeof(answer)));
  EXPECT_EQ(answer.kind, static_cast<uint8_t>(wire::FrameKind::kReadResponse));
  EXPECT_EQ(answer.id, 42u);
  EXPECT_EQ(answer.status, static_cast<uint32_t>(wire::ReadStatus::kRefused));
  EXPECT_EQ(answer.body_bytes, 0u);
  // A read response nobody asked for is a protocol violation.
  header = Frame(wire::FrameKind::kReadResponse, 16, 12345);
  SendBytes(fd, &header, sizeof(header));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
  EXPECT_GE(server_->stats().connections_dropped, 1u);
}

// Sends a read request and returns the response's status and bytes.
std::pair<uint32_t, std::vector<std::byte>> ReadRemote(int fd, uint64_t addr, uint64_t length,
                                                       uint32_t key, uint64_t id) {
  wire::ReadRequestBody request{};
  request.remote_addr = addr;
  request.length = length;
  request.rkey = key;
  wire::FrameHeader header{};
  header.magic = wire::kTcpMagic;
  header.version = static_cast<uint8_t>(wire::kWireVersion);
  header.kind = static_cast<uint8_t>(wire::FrameKind::kReadRequest);
  header.body_bytes = sizeof(request);
  header.id = id;
  // One write: header and body in two would wait for a delayed ACK (Nagle).
  std::byte frame[sizeof(header) + sizeof(request)];
  std::memcpy(frame, &header, sizeof(header));
  std::memcpy(frame + sizeof(header), &request, sizeof(request));
  EXPECT_EQ(::send(fd, frame, sizeof(frame), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(frame)));
  std::vector<std::byte> body;
  for (int frames = 0; frames < 64; ++frames) {  // skip sends (credits) until the answer
    wire::FrameHeader answer{};
    if (!ReadFrame(fd, answer, body)) break;
    if (answer.kind == static_cast<uint8_t>(wire::FrameKind::kReadResponse)) {
      EXPECT_EQ(answer.id, id);
      return {answer.status, body};
    }
  }
  ADD_FAILURE() << "no read response";
  return {~0u, {}};
}

// Issue 16's hostile reader: it takes part in one call, learns where the server's
// response lies and under which key, reads it, sends FIN, and keeps reading there
// while another client's responses (its secret) pass through the same pool. Before
// offers were scoped, the key was the pool's and the read returned the victim's
// bytes. Now every read after FIN, past the offer or under a guessed key is refused
// with the same status and no byte.
TEST_F(HostileTest, AReaderGetsNothingAfterFinPastItsOfferOrByGuessing) {
  constexpr size_t kResponseBytes = 256 * 1024;  // rendezvous under the default config
  const auto respond_with = [](std::byte fill) {
    return [fill](const Message&, ResponseWriter& response) {
      auto buffer = response.allocator().Allocate(kResponseBytes);
      if (!buffer.ok()) return buffer.status();
      std::memset(buffer->data(), static_cast<int>(fill), kResponseBytes);
      response.Append(std::move(buffer).value());
      return Status::Ok();
    };
  };
  server_->RegisterHandler("mine", respond_with(std::byte{0x11}));
  server_->RegisterHandler("victim", respond_with(std::byte{0xEE}));

  int fd = ConnectRaw();
  SendHello(fd);
  // The announce of the response names the offer.
  std::vector<wire::RendezvousEntry> offers;
  ASSERT_NO_FATAL_FAILURE(CallAndCollectOffers(fd, "mine", 1, offers));
  ASSERT_EQ(offers.size(), 1u);
  const wire::RendezvousEntry offer = offers[0];
  ASSERT_EQ(offer.length, kResponseBytes);

  // Reading what was offered works.
  auto [status, bytes] = ReadRemote(fd, offer.remote_addr, offer.length, offer.rkey, 1);
  ASSERT_EQ(status, static_cast<uint32_t>(wire::ReadStatus::kOk));
  ASSERT_EQ(bytes.size(), kResponseBytes);
  EXPECT_EQ(bytes[0], std::byte{0x11});
  // Past the offer: refused, though it is the same registered pool.
  std::tie(status, bytes) = ReadRemote(fd, offer.remote_addr, offer.length + 1, offer.rkey, 2);
  EXPECT_EQ(status, static_cast<uint32_t>(wire::ReadStatus::kRefused));
  EXPECT_TRUE(bytes.empty());

  wire::PacketHeader fin{};
  fin.kind = static_cast<uint8_t>(wire::PacketKind::kFin);
  fin.direction = static_cast<uint8_t>(wire::Direction::kResponse);
  fin.call_id = 1;
  fin.slice_count = 1;
  SendPacket(fd, fin, nullptr, 0);

  // The victim's responses go through the pool; the reader keeps trying.
  std::mt19937 guesses(16);
  for (int round = 0; round < 20; ++round) {
    Result<Message> response = client_->Call("victim", {});
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    std::tie(status, bytes) =
        ReadRemote(fd, offer.remote_addr, offer.length, offer.rkey, 100 + round);
    EXPECT_EQ(status, static_cast<uint32_t>(wire::ReadStatus::kRefused));
    EXPECT_TRUE(bytes.empty());
    for (int guess = 0; guess < 50; ++guess) {
      std::tie(status, bytes) =
          ReadRemote(fd, offer.remote_addr, 4096, static_cast<uint32_t>(guesses()), 1000);
      ASSERT_EQ(status, static_cast<uint32_t>(wire::ReadStatus::kRefused));
      ASSERT_TRUE(bytes.empty());
    }
  }
  ::close(fd);
  ExpectOthersStillServed();
}

TEST_F(HostileTest, ReadRequestsFromAPeerThatNeverReadsAreCapped) {
  constexpr size_t kResponseBytes = 256 * 1024;  // rendezvous under the default config
  server_->RegisterHandler("mine", [](const Message&, ResponseWriter& response) {
    auto buffer = response.allocator().Allocate(kResponseBytes);
    if (!buffer.ok()) return buffer.status();
    std::memset(buffer->data(), 0x11, kResponseBytes);
    response.Append(std::move(buffer).value());
    return Status::Ok();
  });
  int fd = ConnectRaw();
  SendHello(fd);
  std::vector<wire::RendezvousEntry> offers;
  ASSERT_NO_FATAL_FAILURE(CallAndCollectOffers(fd, "mine", 1, offers));
  ASSERT_EQ(offers.size(), 1u);
  ASSERT_EQ(offers[0].length, kResponseBytes);
  // The requests are well formed: one read and its answer.
  auto [status, bytes] = ReadRemote(fd, offers[0].remote_addr, kResponseBytes, offers[0].rkey, 1);
  ASSERT_EQ(status, static_cast<uint32_t>(wire::ReadStatus::kOk));

  // Twice the cap: the socket buffers between the two ends hold a few MiB, a few
  // dozen of these answers, so most of the rest would wait in the server's queue.
  const uint64_t cap = kResponseBytes / wire::kMinChunkBytes + wire::kReadResponsesBeyondOffers;
  const std::vector<wire::RendezvousEntry> flood(2 * cap, offers[0]);
  const uint64_t dropped = server_->stats().connections_dropped;
  const size_t sent = SendReadRequests(fd, flood);
  // Reading nothing meanwhile (reading would drain the queue the server fills).
  for (int i = 0; i < 1000 && server_->stats().connections_dropped == dropped; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->stats().connections_dropped, dropped + 1)
      << "the server kept answering " << sent << " read requests from a peer that reads nothing";
  // The peer sees it too. The server owes 256 KiB per request it took: one that
  // kept the connection would send far more than 64 MiB (4 GiB here).
  EXPECT_TRUE(DroppedByServer(fd, uint64_t{64} << 20));
  ::close(fd);
  ExpectOthersStillServed();
}

// The cap must not catch a well-behaved reader, however slowly it reads. This one
// reads every slice of a response of 20000 (one read each, as the engine reads a
// slice of one chunk) and reads nothing back until it has asked for all: 20000
// reads in flight, whose answers (80 MiB) mostly wait in the server's queue (its
// receive buffer is small, and the server's send buffer holds a few MiB), more of
// them than kReadResponsesBeyondOffers. It gets every one.
TEST_F(HostileTest, ASlowReaderWithThousandsOfReadsInFlightIsServed) {
  constexpr size_t kSlices = 20000;
  constexpr size_t kSliceBytes = wire::kMinChunkBytes;
  static_assert(kSlices > 2 * wire::kReadResponsesBeyondOffers);
  Config config = server_->config();
  config.eager_threshold = 1024;  // the slices go rendezvous
  ASSERT_TRUE(server_->Reconfigure(config).ok());
  server_->RegisterHandler("many", [](const Message&, ResponseWriter& response) {
    for (size_t i = 0; i < kSlices; ++i) {
      auto buffer = response.allocator().Allocate(kSliceBytes);
      if (!buffer.ok()) return buffer.status();
      std::memset(buffer->data(), static_cast<int>(i & 0xFF), kSliceBytes);
      response.Append(std::move(buffer).value());
    }
    return Status::Ok();
  });
  int fd = ConnectRaw(256 * 1024);
  SendHello(fd);
  std::vector<wire::RendezvousEntry> offers;
  ASSERT_NO_FATAL_FAILURE(CallAndCollectOffers(fd, "many", kSlices, offers));
  ASSERT_EQ(offers.size(), kSlices);
  ASSERT_EQ(SendReadRequests(fd, offers), kSlices) << "the server stopped reading";
  // Another call behind the requests: once the server has started it, it has taken
  // every request and queued every answer it could not write yet.
  const uint64_t started = server_->stats().calls_started;
  SendEagerCall(fd, 2, "echo");
  for (int i = 0; i < 1000 && server_->stats().calls_started == started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server_->stats().calls_started, started + 1)
      << "the server did not take every request (it dropped the connection?)";

  size_t answered = 0;
  for (size_t frames = 0; frames < kSlices + 256 && answered < kSlices; ++frames) {
    wire::FrameHeader header{};
    std::vector<std::byte> body;
    ASSERT_TRUE(ReadFrame(fd, header, body))
        << "the server dropped a well-behaved reader after " << answered << " answers";
    if (header.kind != static_cast<uint8_t>(wire::FrameKind::kReadResponse)) continue;
    ASSERT_EQ(header.status, static_cast<uint32_t>(wire::ReadStatus::kOk));
    ASSERT_GE(header.id, 1u);
    ASSERT_LE(header.id, kSlices);
    ASSERT_EQ(body.size(), kSliceBytes);
    const wire::RendezvousEntry& asked = offers[header.id - 1];
    ASSERT_EQ(body.front(), static_cast<std::byte>(asked.slice_index & 0xFF));
    ++answered;
  }
  EXPECT_EQ(answered, kSlices);
  wire::PacketHeader fin{};
  fin.kind = static_cast<uint8_t>(wire::PacketKind::kFin);
  fin.direction = static_cast<uint8_t>(wire::Direction::kResponse);
  fin.call_id = 1;
  fin.slice_count = kSlices;
  SendPacket(fd, fin, nullptr, 0);
  ::close(fd);
  ExpectOthersStillServed();
}

}  // namespace
}  // namespace artune::transport
