// The hostile-peer fixture of the tcp data port (hostile_test.cc, hostile_reads_test.cc):
// a server with the test handlers, a well-behaved client, and a raw socket that
// speaks the wire protocol as a peer that breaks it.
#pragma once

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

// Reads one frame: its header and body (at most `max_body` bytes, else fails).
inline bool ReadFrame(int fd, wire::FrameHeader& header, std::vector<std::byte>& body,
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

  // The header of a request packet of one slice to a 4-byte method name.
  static wire::PacketHeader RequestPacket(wire::PacketKind kind, uint64_t call_id,
                                          uint32_t payload_bytes) {
    wire::PacketHeader packet{};
    packet.kind = static_cast<uint8_t>(kind);
    packet.direction = static_cast<uint8_t>(wire::Direction::kRequest);
    packet.call_id = call_id;
    packet.slice_count = 1;
    packet.entry_count = 1;
    packet.method_bytes = 4;
    packet.payload_bytes = payload_bytes;
    return packet;
  }

  // Announces a request of one rendezvous slice to the "echo" handler: the entry,
  // then the method, unpadded (a struct of the two would carry 4 bytes of padding,
  // and the packet would be dropped for its length, not for what it announces).
  void SendEchoAnnounce(int fd, const wire::RendezvousEntry& entry) {
    const wire::PacketHeader packet = RequestPacket(wire::PacketKind::kAnnounce, 1, 4);
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
    const wire::PacketHeader packet = RequestPacket(wire::PacketKind::kEager, call_id, 4 + 4);
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

}  // namespace artune::transport
