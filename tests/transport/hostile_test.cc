// A hostile peer on the tcp data port: malformed and oversized frames and packets
// get that connection dropped (never a crash, hang or big allocation) while a
// well-behaved client keeps working.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>
#include <tuple>

#include "artune/transport/knobs.h"
#include "control.grpc.pb.h"
#include "engine_test_util.h"
#include "wire.h"

namespace artune::transport {
namespace {

// Reads one frame: its header and body (at most `max_body` bytes, else fails).
bool ReadFrame(int fd, wire::FrameHeader& header, std::vector<std::byte>& body,
               uint64_t max_body = 1 << 20) {
  if (::recv(fd, &header, sizeof(header), MSG_WAITALL) != static_cast<ssize_t>(sizeof(header))) {
    return false;
  }
  if (header.body_bytes > max_body) return false;
  body.resize(header.body_bytes);
  return header.body_bytes == 0 ||
         ::recv(fd, body.data(), body.size(), MSG_WAITALL) == static_cast<ssize_t>(body.size());
}

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = Server::Start(testing::TestConfig(FabricKind::kTcp), "127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    testing::RegisterTestHandlers(*server_);
    auto client = Client::Connect(testing::TestConfig(FabricKind::kTcp), server_->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    // tcp's accept runs on the server's progress thread, maybe after Connect has
    // returned here: tests that count accepted connections start once it has.
    for (int i = 0; i < 500 && server_->stats().connections_accepted == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(server_->stats().connections_accepted, 1u);
    // The data endpoint, as any client learns it: from the handshake.
    stub_ = control::Control::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    const std::string endpoint = Handshake().data_endpoint();
    data_port_ = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  }

  // A control-plane handshake: the data endpoint and a one-time data ticket.
  control::HandshakeResponse Handshake() {
    control::HandshakeRequest request;
    request.set_wire_version(wire::kWireVersion);
    control::HandshakeResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(stub_->Handshake(&context, request, &response).ok());
    return response;
  }

  // A connection to the data port (`receive_buffer_bytes`: a fixed receive buffer
  // of that size instead of one that grows).
  int ConnectRaw(int receive_buffer_bytes = 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer_bytes > 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof(receive_buffer_bytes));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(data_port_);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    timeval timeout{20, 0};  // a bound, not a synchronisation: EOF is expected long before
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    return fd;
  }

  static void SendBytes(int fd, const void* data, size_t length) {
    ASSERT_EQ(::send(fd, data, length, MSG_NOSIGNAL), static_cast<ssize_t>(length));
  }

  static wire::FrameHeader Frame(wire::FrameKind kind, uint64_t body_bytes, uint64_t id = 0) {
    wire::FrameHeader header{};
    header.magic = wire::kTcpMagic;
    header.version = static_cast<uint8_t>(wire::kWireVersion);
    header.kind = static_cast<uint8_t>(kind);
    header.body_bytes = body_bytes;
    header.id = id;
    return header;
  }

  // A hello with the default geometry and a fresh ticket, as a real client would
  // send (`ticket`: this one instead).
  void SendHello(int fd, const std::string* ticket = nullptr) {
    const Config config;
    wire::ConnectParams params{};
    const std::string fresh = ticket ? *ticket : Handshake().data_ticket();
    EXPECT_EQ(fresh.size(), sizeof(params.ticket));
    std::memcpy(params.ticket, fresh.data(), std::min(fresh.size(), sizeof(params.ticket)));
    params.wire_version = wire::kWireVersion;
    params.eager_buffer_count = config.eager_buffer_count;
    params.eager_buffer_bytes = EagerBufferBytes(config);
    params.max_outstanding = config.max_outstanding;
    wire::FrameHeader header = Frame(wire::FrameKind::kHello, sizeof(params));
    SendBytes(fd, &header, sizeof(header));
    SendBytes(fd, &params, sizeof(params));
  }

  // Sends one engine packet in a kSend frame.
  void SendPacket(int fd, const wire::PacketHeader& packet, const void* rest, size_t rest_bytes) {
    wire::FrameHeader header = Frame(wire::FrameKind::kSend, sizeof(packet) + rest_bytes);
    SendBytes(fd, &header, sizeof(header));
    SendBytes(fd, &packet, sizeof(packet));
    if (rest_bytes > 0) SendBytes(fd, rest, rest_bytes);
  }

  // Announces a request of one rendezvous slice to the "echo" handler: the entry,
  // then the method, unpadded (a struct of the two would carry 4 bytes of padding,
  // and the packet would be dropped for its length, not for what it announces).
  void SendEchoAnnounce(int fd, const wire::RendezvousEntry& entry) {
    wire::PacketHeader packet{};
    packet.kind = static_cast<uint8_t>(wire::PacketKind::kAnnounce);
    packet.direction = static_cast<uint8_t>(wire::Direction::kRequest);
    packet.call_id = 1;
    packet.slice_count = 1;
    packet.entry_count = 1;
    packet.method_bytes = 4;
    packet.payload_bytes = 4;
    std::byte body[sizeof(entry) + 4];
    std::memcpy(body, &entry, sizeof(entry));
    std::memcpy(body + sizeof(entry), "echo", 4);
    SendPacket(fd, packet, body, sizeof(body));
  }

  // True when the server closed the connection (read returns end-of-stream), having
  // sent at most `give_up_after` bytes before (a server that means to send more
  // than that is not closing it).
  static bool DroppedByServer(int fd,
                              uint64_t give_up_after = std::numeric_limits<uint64_t>::max()) {
    char sink[64 * 1024];
    for (uint64_t received = 0; received <= give_up_after;) {
      ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      received += static_cast<uint64_t>(n);
    }
    return false;
  }

  // Calls `method` as a raw client: one eager packet with a 4-byte slice.
  void SendEagerCall(int fd, uint64_t call_id, const char (&method)[5]) {
    wire::PacketHeader packet{};
    packet.kind = static_cast<uint8_t>(wire::PacketKind::kEager);
    packet.direction = static_cast<uint8_t>(wire::Direction::kRequest);
    packet.entry_count = 1;
    packet.call_id = call_id;
    packet.slice_count = 1;
    packet.method_bytes = 4;
    packet.payload_bytes = 4 + 4;
    struct {
      wire::SliceEntry entry{0, 4};
      char method[4] = {};
      char data[4] = {'d', 'a', 't', 'a'};
    } body;
    static_assert(sizeof(body) == sizeof(wire::SliceEntry) + 8);
    std::memcpy(body.method, method, sizeof(body.method));
    SendPacket(fd, packet, &body, sizeof(body));
  }

  // Calls `method` as a raw client (call 1) and collects the first `count`
  // rendezvous entries its response announces.
  void CallAndCollectOffers(int fd, const char (&method)[5], size_t count,
                            std::vector<wire::RendezvousEntry>& offers) {
    SendEagerCall(fd, 1, method);
    // Announce packets hold hundreds of entries each; other frames (credits) may
    // come between them.
    for (size_t frames = 0; frames < count + 64 && offers.size() < count; ++frames) {
      wire::FrameHeader header{};
      std::vector<std::byte> frame;
      ASSERT_TRUE(ReadFrame(fd, header, frame)) << "the server closed the connection";
      if (header.kind != static_cast<uint8_t>(wire::FrameKind::kSend)) continue;
      ASSERT_GE(frame.size(), sizeof(wire::PacketHeader));
      wire::PacketHeader got;
      std::memcpy(&got, frame.data(), sizeof(got));
      if (got.kind != static_cast<uint8_t>(wire::PacketKind::kAnnounce)) continue;
      ASSERT_LE(sizeof(got) + got.entry_count * sizeof(wire::RendezvousEntry), frame.size());
      for (uint32_t i = 0; i < got.entry_count && offers.size() < count; ++i) {
        wire::RendezvousEntry entry;
        std::memcpy(&entry, frame.data() + sizeof(got) + i * sizeof(entry), sizeof(entry));
        offers.push_back(entry);
      }
    }
  }

  // Sends a read request for each of `reads` (id: its index + 1), hundreds of frames
  // per write, and reads nothing. Returns how many went out: fewer when the server
  // closed the connection or stopped reading it for 5 s.
  static size_t SendReadRequests(int fd, const std::vector<wire::RendezvousEntry>& reads) {
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    constexpr size_t kFramesPerWrite = 256;
    constexpr size_t kFrameBytes = sizeof(wire::FrameHeader) + sizeof(wire::ReadRequestBody);
    std::vector<std::byte> batch;
    size_t sent = 0;
    while (sent < reads.size()) {
      const size_t count = std::min(kFramesPerWrite, reads.size() - sent);
      batch.resize(count * kFrameBytes);
      for (size_t i = 0; i < count; ++i) {
        const wire::RendezvousEntry& read = reads[sent + i];
        const wire::FrameHeader header =
            Frame(wire::FrameKind::kReadRequest, sizeof(wire::ReadRequestBody), sent + i + 1);
        wire::ReadRequestBody request{};
        request.remote_addr = read.remote_addr;
        request.length = read.length;
        request.rkey = read.rkey;
        std::memcpy(batch.data() + i * kFrameBytes, &header, sizeof(header));
        std::memcpy(batch.data() + i * kFrameBytes + sizeof(header), &request, sizeof(request));
      }
      for (size_t written = 0; written < batch.size();) {
        ssize_t n = ::send(fd, batch.data() + written, batch.size() - written, MSG_NOSIGNAL);
        if (n <= 0) return sent;
        written += static_cast<size_t>(n);
      }
      sent += count;
    }
    return sent;
  }

  void ExpectOthersStillServed() {
    auto payload = testing::MakePayload({10, 100 * 1024}, 77);
    auto views = testing::Views(payload);
    Result<Message> response = client_->Call("echo", views);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_TRUE(testing::SameSlices(*response, payload));
  }

  void ExpectNoLargeAllocation() {
    // The registered pool holds the connections' eager buffers and little else.
    auto* allocator = &server_->allocator();
    Result<Buffer> probe = allocator->Allocate(1);  // still works
    EXPECT_TRUE(probe.ok());
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<control::Control::Stub> stub_;
  uint16_t data_port_ = 0;
};

TEST_F(HostileTest, GarbageBytesDropTheConnection) {
  int fd = ConnectRaw();
  const char garbage[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n garbage garbage garbage";
  SendBytes(fd, garbage, sizeof(garbage));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
}

TEST_F(HostileTest, OversizedHelloAndBadParamsAreRefused) {
  int fd = ConnectRaw();
  wire::FrameHeader header = Frame(wire::FrameKind::kHello, uint64_t{1} << 40);
  SendBytes(fd, &header, sizeof(header));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);

  fd = ConnectRaw();
  wire::ConnectParams params{};
  params.wire_version = wire::kWireVersion;
  params.eager_buffer_count = 4096;
  params.eager_buffer_bytes = uint64_t{1} << 40;  // would pin terabytes
  params.max_outstanding = 1;
  header = Frame(wire::FrameKind::kHello, sizeof(params));
  SendBytes(fd, &header, sizeof(header));
  SendBytes(fd, &params, sizeof(params));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
}

TEST_F(HostileTest, SendLargerThanTheReceiveBufferIsDropped) {
  int fd = ConnectRaw();
  SendHello(fd);
  wire::FrameHeader header = Frame(wire::FrameKind::kSend, uint64_t{1} << 40);
  SendBytes(fd, &header, sizeof(header));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectNoLargeAllocation();
  ExpectOthersStillServed();
}

TEST_F(HostileTest, PacketLengthsThatDisagreeAreDropped) {
  int fd = ConnectRaw();
  SendHello(fd);
  wire::PacketHeader packet{};
  packet.kind = static_cast<uint8_t>(wire::PacketKind::kEager);
  packet.direction = static_cast<uint8_t>(wire::Direction::kRequest);
  packet.call_id = 1;
  packet.slice_count = 1;
  packet.entry_count = 1;
  packet.method_bytes = 4;
  packet.payload_bytes = 4 + 8;
  // The entry claims 1 MiB of data; the packet carries 8 bytes.
  struct {
    wire::SliceEntry entry{0, 1 << 20};
    char method[4] = {'e', 'c', 'h', 'o'};
    char data[8] = {};
  } body;
  SendPacket(fd, packet, &body, sizeof(body));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
}

TEST_F(HostileTest, AnnounceBeyondTheLimitsIsDroppedWithoutAllocating) {
  int fd = ConnectRaw();
  SendHello(fd);
  SendEchoAnnounce(fd, {0, 1, 0x1000, uint64_t{1} << 40, uint64_t{1} << 40});
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectNoLargeAllocation();
  ExpectOthersStillServed();
}

TEST_F(HostileTest, TooManySlicesAndUnknownKindsAreDropped) {
  for (uint8_t kind : {uint8_t{0}, uint8_t{99}}) {
    int fd = ConnectRaw();
    SendHello(fd);
    wire::PacketHeader packet{};
    packet.kind = kind;
    SendPacket(fd, packet, nullptr, 0);
    EXPECT_TRUE(DroppedByServer(fd));
    ::close(fd);
  }
  int fd = ConnectRaw();
  SendHello(fd);
  wire::PacketHeader packet{};
  packet.kind = static_cast<uint8_t>(wire::PacketKind::kEager);
  packet.call_id = 1;
  packet.slice_count = 0xFFFFFFFF;  // would size a huge reassembly table
  packet.method_bytes = 4;
  packet.payload_bytes = 4;
  SendPacket(fd, packet, "echo", 4);
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
}

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

TEST_F(HostileTest, DataConnectionsNeedAFreshTicketEach) {
  const std::string ticket = Handshake().data_ticket();
  const uint64_t accepted_before = server_->stats().connections_accepted;
  int first = ConnectRaw();
  SendHello(first, &ticket);
  // Admitted: the accept runs on the server's progress thread (bounded wait).
  for (int i = 0; i < 500 && server_->stats().connections_accepted == accepted_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->stats().connections_accepted, accepted_before + 1);
  int replayed = ConnectRaw();
  SendHello(replayed, &ticket);
  EXPECT_TRUE(DroppedByServer(replayed));
  const std::string made_up(wire::kDataTicketBytes, 'x');
  int forged = ConnectRaw();
  SendHello(forged, &made_up);
  EXPECT_TRUE(DroppedByServer(forged));
  EXPECT_EQ(server_->stats().connections_accepted, accepted_before + 1);
  ::close(first);
  ::close(replayed);
  ::close(forged);
  ExpectOthersStillServed();
}

// Issue 16, medium 4: four connections declaring 1 GiB receive pools each locked
// real clients out. A connection now gets the pool its handshake's config gives,
// no more: a greedy hello is refused and real clients keep connecting.
TEST_F(HostileTest, AReceivePoolBeyondTheHandshakesIsRefused) {
  std::vector<int> greedy;
  for (int i = 0; i < 4; ++i) {
    int fd = ConnectRaw();
    const std::string ticket = Handshake().data_ticket();
    wire::ConnectParams params{};
    std::memcpy(params.ticket, ticket.data(), sizeof(params.ticket));
    params.wire_version = wire::kWireVersion;
    params.eager_buffer_count = 1023;
    params.eager_buffer_bytes = 1 << 20;  // 1023 MiB of registered memory
    params.max_outstanding = 64;
    wire::FrameHeader header = Frame(wire::FrameKind::kHello, sizeof(params));
    SendBytes(fd, &header, sizeof(header));
    SendBytes(fd, &params, sizeof(params));
    EXPECT_TRUE(DroppedByServer(fd));
    greedy.push_back(fd);
  }
  auto fresh = Client::Connect(testing::TestConfig(FabricKind::kTcp), server_->address());
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  auto payload = testing::MakePayload({10, 300 * 1024}, 9);
  auto views = testing::Views(payload);
  EXPECT_TRUE((*fresh)->Call("echo", views).ok());
  for (int fd : greedy) ::close(fd);
}

// Issue 16, medium 5: silent connections held descriptors forever. An accepted
// connection that sends no hello is closed after the hello timeout (10 s).
TEST_F(HostileTest, SilentConnectionsAreClosed) {
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(ConnectRaw());
  for (int fd : silent) {
    EXPECT_TRUE(DroppedByServer(fd)) << "a silent connection outlived the hello timeout";
    ::close(fd);
  }
  ExpectOthersStillServed();
}

// Issue 16, medium 5: with the descriptors used up, the accept loop spun at
// 60-100 % of a core. Now it pauses, refuses past its share and recovers.
TEST_F(HostileTest, RunningOutOfDescriptorsNeitherSpinsNorSticks) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Leave this process a few descriptors more than it has open now.
  size_t open_now = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++open_now;
  }
  rlimit tight = saved;
  tight.rlim_cur = open_now + 24;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  std::vector<int> attackers;
  for (int i = 0; i < 40; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;  // this process is out too: enough
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(data_port_);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      break;
    }
    attackers.push_back(fd);
  }
  // The server cannot accept every one of them; while they wait, it must idle.
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::getrusage(RUSAGE_SELF, &after);
  auto cpu_s = [](const rusage& r) {
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  EXPECT_LT(cpu_s(after) - cpu_s(before), 0.25) << "the accept loop spins";
  for (int fd : attackers) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  // Recovered: a new client connects and calls (within the accept pause, 1 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto fresh = Client::Connect(testing::TestConfig(FabricKind::kTcp), server_->address());
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  auto payload = testing::MakePayload({100}, 2);
  auto views = testing::Views(payload);
  EXPECT_TRUE((*fresh)->Call("echo", views).ok());
}

TEST_F(HostileTest, FloodWithoutCreditsIsDropped) {
  int fd = ConnectRaw();
  SendHello(fd);
  wire::PacketHeader packet{};
  packet.kind = static_cast<uint8_t>(wire::PacketKind::kCredit);
  // More packets than receive buffers were posted, without waiting for credits.
  // The server may drop us before the loop ends: ignore send errors then.
  for (int i = 0; i < 200; ++i) {
    wire::FrameHeader header = Frame(wire::FrameKind::kSend, sizeof(packet));
    if (::send(fd, &header, sizeof(header), MSG_NOSIGNAL) < 0) break;
    if (::send(fd, &packet, sizeof(packet), MSG_NOSIGNAL) < 0) break;
  }
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
}

// A reader that asks for its offer over and over and never reads its socket: the
// answers pile up in the server's send queue. The server used to queue them for as
// long as the peer kept asking; now a peer with more reads in flight than the
// protocol allows (a read per 4 KiB chunk offered to it, plus
// wire::kReadResponsesBeyondOffers) is dropped.
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
