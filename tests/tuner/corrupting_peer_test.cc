// A peer that corrupts one byte of every payload: the stock gRPC channel must
// notice (validated = false), and `artune bench` must exit with code 3 and still
// store the run.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "../temp_dir.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/benchmark.h"
#include "artune/tuner/checksum.h"

namespace artune::tuner {
namespace {

// Answers echo and ack like the real server, but after flipping one bit of the
// request in the middle.
class CorruptingService final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    return new Reactor(context->method());
  }

 private:
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    explicit Reactor(std::string method) : method_(std::move(method)) { StartRead(&request_); }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
        return;
      }
      std::vector<grpc::Slice> slices;
      (void)request_.Dump(&slices);
      std::string bytes;
      for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      bytes[bytes.size() / 2] ^= 0x01;
      if (method_ == kGrpcAckMethod) {
        std::vector<ByteSpan> spans = {
            ByteSpan(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size())};
        auto ack = EncodeAck(ComputeAck(spans));
        bytes.assign(reinterpret_cast<const char*>(ack.data()), ack.size());
      }
      grpc::Slice slice(bytes);
      reply_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
    }
    void OnDone() override { delete this; }

   private:
    std::string method_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer reply_;
  };
};

class CorruptingPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 1);
  }
  void TearDown() override { server_->Shutdown(); }

  CorruptingService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(CorruptingPeerTest, EveryBenchmarkReportsTheMismatch) {
  auto transport = MakeGrpcBenchTransport();
  auto payload = GeneratePayload(PayloadSpec{});
  ASSERT_TRUE(payload.ok());
  for (auto kind : {BenchmarkKind::kLatency, BenchmarkKind::kBandwidth, BenchmarkKind::kPs}) {
    RunOptions options;
    options.kind = kind;
    options.warmup_s = 0;
    options.duration_s = 0.05;
    options.servers = 1;
    options.clients = 1;
    auto result =
        RunBenchmark(*transport, {"127.0.0.1:" + std::to_string(port_)}, *payload, options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_FALSE(result->validated) << BenchmarkName(kind);
    EXPECT_NE(result->validation_error.find("corrupted"), std::string::npos)
        << result->validation_error;
  }
}

TEST_F(CorruptingPeerTest, BenchExitsWithCodeThree) {
  const test_support::TempDir temp("artune-corrupt");
  const std::string& dir = temp.path();
  // The peer's stock gRPC server 0 is on base port + 1.
  std::string command =
      "env -u ARTUNE_CONFIG XDG_CONFIG_HOME=" + dir + " " + ARTUNE_BINARY + " --db " + dir +
      "/t.db bench --transport grpc --peer 127.0.0.1:" + std::to_string(port_ - 1) +
      " --warmup 0 --duration 0.1 --json";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << out;
  EXPECT_NE(out.find("\"validated\": false"), std::string::npos) << out;
}

}  // namespace
}  // namespace artune::tuner
