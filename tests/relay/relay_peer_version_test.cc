// An origin relay asked to carry toward a host whose relay answers but refuses it
// (a relay of another wire version: two artune builds on two hosts): the program's
// connection goes direct, as for a host without a relay, and the relay says so,
// since otherwise nothing shows that the tuned transport carries nothing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "control.grpc.pb.h"
#include "redirect_asker.h"
#include "redirect_protocol.h"
#include "relay.h"

namespace artune::relay {
namespace {

// A control plane that refuses every handshake as a server of another wire
// version does.
class OtherVersionControl final : public transport::control::Control::Service {
  grpc::Status Handshake(grpc::ServerContext*, const transport::control::HandshakeRequest*,
                         transport::control::HandshakeResponse*) override {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "wire version 3 not supported; this server speaks 2");
  }
};

TEST(RelayPeerVersion, ARelayThatRefusesTheHandshakeIsSaidAndTheConnectionGoesDirect) {
  OtherVersionControl service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> other = builder.BuildAndStart();
  ASSERT_NE(other, nullptr);
  ASSERT_GT(port, 0);

  std::mutex mutex;
  std::vector<std::string> lines;
  RelayOptions options;
  options.relay_port = static_cast<uint16_t>(port);
  options.control_socket =
      (std::filesystem::temp_directory_path() / ("relay-version-" + std::to_string(getpid())))
          .string();
  options.log = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
  };
  auto origin = Relay::Start(options);
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();

  EXPECT_EQ(testing::Ask(options.control_socket, 50051).verdict, kRedirectDirect);
  // Remembered: the second question is answered without a handshake or a line.
  EXPECT_EQ(testing::Ask(options.control_socket, 50052).verdict, kRedirectDirect);
  (*origin)->Shutdown();
  other->Shutdown();

  std::lock_guard lock(mutex);
  int said = 0;
  for (const std::string& line : lines) {
    if (line.find("does not carry") == std::string::npos) continue;
    ++said;
    EXPECT_NE(line.find("wire version"), std::string::npos) << line;
    EXPECT_NE(line.find("go direct"), std::string::npos) << line;
  }
  EXPECT_EQ(said, 1) << "lines: " << lines.size();
}

}  // namespace
}  // namespace artune::relay
