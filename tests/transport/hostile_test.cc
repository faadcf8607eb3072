// A hostile peer on the tcp data port: malformed and oversized frames and packets
// get that connection dropped (never a crash, hang or big allocation) while a
// well-behaved client keeps working.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "artune/transport/knobs.h"
#include "control.grpc.pb.h"
#include "engine_test_util.h"
#include "wire.h"

namespace artune::transport {
namespace {

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
    // The data endpoint, as any client learns it: from the handshake.
    auto stub = control::Control::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    control::HandshakeRequest request;
    request.set_wire_version(wire::kWireVersion);
    control::HandshakeResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Handshake(&context, request, &response).ok());
    const std::string endpoint = response.data_endpoint();
    data_port_ = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  }

  int ConnectRaw() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
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

  // A hello with the default geometry, as a real client would send.
  void SendHello(int fd) {
    const Config config;
    wire::ConnectParams params{};
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

  // True when the server closed the connection (read returns end-of-stream).
  static bool DroppedByServer(int fd) {
    char sink[4096];
    while (true) {
      ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
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
  wire::PacketHeader packet{};
  packet.kind = static_cast<uint8_t>(wire::PacketKind::kAnnounce);
  packet.direction = static_cast<uint8_t>(wire::Direction::kRequest);
  packet.call_id = 1;
  packet.slice_count = 1;
  packet.entry_count = 1;
  packet.method_bytes = 4;
  packet.payload_bytes = 4;
  struct {
    wire::RendezvousEntry entry{0, 1, 0x1000, uint64_t{1} << 40, uint64_t{1} << 40};
    char method[4] = {'e', 'c', 'h', 'o'};
  } body;
  SendPacket(fd, packet, &body, sizeof(body));
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
  EXPECT_EQ(answer.status, static_cast<uint32_t>(wire::ReadStatus::kBadKey));
  EXPECT_EQ(answer.body_bytes, 0u);
  // A read response nobody asked for is a protocol violation.
  header = Frame(wire::FrameKind::kReadResponse, 16, 12345);
  SendBytes(fd, &header, sizeof(header));
  EXPECT_TRUE(DroppedByServer(fd));
  ::close(fd);
  ExpectOthersStillServed();
  EXPECT_GE(server_->stats().connections_dropped, 1u);
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

}  // namespace
}  // namespace artune::transport
