// A server only its users can reach (issue 16, high 2): loopback unless told,
// a token beyond it, every control call and data connection checked, the token
// file private to its user, and TLS for the control plane on request.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "artune/transport/credentials.h"
#include "control.grpc.pb.h"
#include "engine_test_util.h"
#include "wire.h"

namespace artune::transport {
namespace {

using ::testing::HasSubstr;

class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/artune-auth-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

Credentials WithToken(std::string token) {
  Credentials credentials;
  credentials.token = std::move(token);
  credentials.token_source = "test";
  return credentials;
}

TEST(Credentials, LoopbackHostsAreOnlyThisHostsAddresses) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "10.0.0.5", "192.168.1.1", "[::]", "example.org", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST(Credentials, TokenFilesArePrivateAndNeverReplaced) {
  ScratchDir dir;
  const std::string path = dir.File("sub/token");
  auto created = CreateTokenFile(path);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->size(), 64u);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  auto read = ReadTokenFile(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, *created);
  EXPECT_EQ(CreateTokenFile(path).status().code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(*ReadTokenFile(path), *created) << "an existing token was replaced";

  ::chmod(path.c_str(), 0644);
  auto readable = ReadTokenFile(path);
  ASSERT_FALSE(readable.ok());
  EXPECT_THAT(readable.status().message(), HasSubstr("chmod 600"));

  const std::string short_path = dir.File("short");
  std::ofstream(short_path) << "abc\n";
  ::chmod(short_path.c_str(), 0600);
  EXPECT_EQ(ReadTokenFile(short_path).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(dir.File("missing")).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Credentials, SecretsCompareWhole) {
  EXPECT_TRUE(SecretsEqual("0123456789abcdef", "0123456789abcdef"));
  EXPECT_FALSE(SecretsEqual("0123456789abcdef", "0123456789abcdeF"));
  EXPECT_FALSE(SecretsEqual("0123456789abcdef", "0123456789abcde"));
}

// Issue 16 (low): `--live 127.0.0.1:99999` reached port 34463 (gRPC wraps it).
TEST(Auth, PortsOutOfRangeAreRefusedNotWrapped) {
  for (const char* address : {"127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:", "nohost", ":50051"}) {
    auto client = Client::Connect(testing::TestConfig(FabricKind::kTcp), address, Credentials{});
    ASSERT_FALSE(client.ok()) << address;
    EXPECT_EQ(client.status().code(), ErrorCode::kInvalidArgument) << address;
    EXPECT_THAT(client.status().message(), HasSubstr("1 to 65535")) << address;
  }
}

TEST(Auth, BeyondLoopbackNeedsAToken) {
  const Config config = testing::TestConfig(FabricKind::kTcp);
  auto refused = Server::Start(config, "0.0.0.0:0", Credentials{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("needs a token"));
  auto loopback = Server::Start(config, "127.0.0.1:0", Credentials{});
  ASSERT_TRUE(loopback.ok()) << loopback.status().ToString();
  EXPECT_EQ((*loopback)->address().rfind("127.0.0.1:", 0), 0u) << (*loopback)->address();
}

constexpr const char* kToken = "a-test-token-of-32-characters!!!";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server =
        Server::Start(testing::TestConfig(FabricKind::kTcp), "127.0.0.1:0", WithToken(kToken));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    testing::RegisterTestHandlers(*server_);
  }

  // A control call made by hand: `token` as metadata (none when empty).
  grpc::Status RawReconfigure(const std::string& token) {
    auto stub = control::Control::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata(std::string(kTokenMetadataKey), token);
    control::ReconfigureRequest request;
    control::HandshakeResponse response;
    return stub->Reconfigure(&context, request, &response);
  }

  std::unique_ptr<Server> server_;
};

TEST_F(AuthTest, ClientsWithoutTheTokenGetNothing) {
  const Config config = testing::TestConfig(FabricKind::kTcp);
  auto anonymous = Client::Connect(config, server_->address(), Credentials{});
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(anonymous.status().message(), HasSubstr("requires a token"));
  auto wrong = Client::Connect(config, server_->address(), WithToken("not-the-token-at-all!!"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), ErrorCode::kPermissionDenied);

  auto stats = QueryServerStats(server_->address(), std::chrono::seconds(5), Credentials{});
  EXPECT_EQ(stats.status().code(), ErrorCode::kPermissionDenied);
  // The reported attack: a reconfiguration pushed by anyone who reaches the port.
  EXPECT_EQ(RawReconfigure("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(RawReconfigure("wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(server_->stats().connections_accepted, 0u);
}

TEST_F(AuthTest, ClientsWithTheTokenWork) {
  auto client =
      Client::Connect(testing::TestConfig(FabricKind::kTcp), server_->address(), WithToken(kToken));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100, 200 * 1024}, 5);
  auto views = testing::Views(payload);
  Result<Message> response = (*client)->Call("echo", views);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_TRUE(testing::SameSlices(*response, payload));
  // A reconfiguration that needs a new data connection spends a new ticket.
  Config bigger = (*client)->config();
  bigger.eager_buffer_count = bigger.eager_buffer_count * 2;
  ASSERT_TRUE((*client)->Reconfigure(bigger).ok());
  response = (*client)->Call("echo", views);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  auto stats = QueryServerStats(server_->address(), std::chrono::seconds(5), WithToken(kToken));
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->connections_accepted, 2u);
}

// TLS for the control plane, with a throw-away self-signed certificate for
// 127.0.0.1 made by the openssl command.
TEST(AuthTls, TheControlPlaneRunsOverTlsWhenAsked) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "the openssl command is not installed (Debian: openssl)";
  }
  ScratchDir dir;
  const std::string key = dir.File("key.pem"), cert = dir.File("cert.pem");
  const std::string make =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=artune "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Credentials server_side = WithToken(kToken);
  server_side.tls_cert_pem = slurp(cert);
  server_side.tls_key_pem = slurp(key);
  auto server = Server::Start(testing::TestConfig(FabricKind::kTcp), "127.0.0.1:0", server_side);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);

  Credentials client_side = WithToken(kToken);
  client_side.tls_ca_pem = slurp(cert);
  auto client =
      Client::Connect(testing::TestConfig(FabricKind::kTcp), (*server)->address(), client_side);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({64}, 1);
  auto views = testing::Views(payload);
  ASSERT_TRUE((*client)->Call("echo", views).ok());
  // A plain-text client cannot even reach the handshake.
  auto plain = Client::Connect(testing::TestConfig(FabricKind::kTcp), (*server)->address(),
                               WithToken(kToken));
  EXPECT_FALSE(plain.ok());
}

}  // namespace
}  // namespace artune::transport
