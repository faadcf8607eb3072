// A real gRPC C++ server and client exchange TensorFlow-like RecvTensor traffic on
// 127.0.0.1 while the pcap backend captures `lo` live: the profile must recover the
// message counts, sizes, tensor shapes and per-method attribution exactly.
// Needs capture rights (root or CAP_NET_RAW + CAP_NET_ADMIN); skips otherwise.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "worker.grpc.pb.h"

namespace artune::probes {
namespace {

tensorflow::TensorProto MakeTensor(const std::vector<int64_t>& shape) {
  tensorflow::TensorProto tensor;
  tensor.set_dtype(tensorflow::DT_FLOAT);
  size_t elements = 1;
  for (int64_t size : shape) {
    tensor.mutable_tensor_shape()->add_dim()->set_size(size);
    elements *= static_cast<size_t>(size);
  }
  std::string content(elements * sizeof(float), '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  tensor.set_tensor_content(std::move(content));
  return tensor;
}

// Answers RecvTensor with a tensor whose shape the rendezvous key names: "a,b,c".
class Worker final : public tensorflow::WorkerService::Service {
 public:
  grpc::Status GetStatus(grpc::ServerContext*, const tensorflow::GetStatusRequest*,
                         tensorflow::GetStatusResponse* response) override {
    response->add_device_attributes("/job:ps/replica:0/task:0/device:CPU:0");
    return grpc::Status::OK;
  }
  grpc::Status RecvTensor(grpc::ServerContext*, const tensorflow::RecvTensorRequest* request,
                          tensorflow::RecvTensorResponse* response) override {
    std::vector<int64_t> shape;
    std::string key = request->rendezvous_key();
    size_t start = 0;
    while (start < key.size()) {
      size_t comma = key.find(',', start);
      if (comma == std::string::npos) comma = key.size();
      shape.push_back(std::stoll(key.substr(start, comma - start)));
      start = comma + 1;
    }
    *response->mutable_tensor() = MakeTensor(shape);
    response->set_send_start_micros(42);
    return grpc::Status::OK;
  }
};

TEST(GrpcLiveCapture, RecoversTheExactDistributionPerMethod) {
  Worker worker;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&worker);
  builder.SetMaxSendMessageSize(16 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  BackendOptions options;
  options.pcap.interface = "lo";
  options.pcap.port = static_cast<uint16_t>(port);
  auto backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  const Status started = (*backend)->Start();
  if (started.code() == ErrorCode::kPermissionDenied) {
    GTEST_SKIP() << "no capture rights on lo (run as root or grant CAP_NET_RAW and "
                    "CAP_NET_ADMIN): "
                 << started.message();
  }
  ASSERT_TRUE(started.ok()) << started.ToString();

  SessionOptions session_options;
  session_options.server_port = static_cast<uint16_t>(port);
  ProbeSession session(session_options);
  std::atomic<bool> stop{false};
  Status run_status;
  std::thread capture([&] {
    StopCondition condition;
    condition.stop_requested = &stop;
    run_status = (*backend)->Run(session, condition);
  });

  // Known traffic: tensors of three size classes, and small status calls.
  const std::vector<std::vector<int64_t>> shapes = {{16}, {256, 256}, {1024, 512},
                                                    {16}, {3, 5, 7},  {256, 256}};
  constexpr int kRounds = 3;
  std::map<std::string, uint64_t> expected_tensors;
  uint64_t request_bytes = 0, response_bytes = 0, status_response_bytes = 0;
  {
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(16 << 20);
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                             grpc::InsecureChannelCredentials(), arguments);
    auto stub = tensorflow::WorkerService::NewStub(channel);
    for (int round = 0; round < kRounds; ++round) {
      for (const auto& shape : shapes) {
        tensorflow::RecvTensorRequest request;
        request.set_step_id(round + 1);
        std::string key;
        for (int64_t size : shape) key += (key.empty() ? "" : ",") + std::to_string(size);
        request.set_rendezvous_key(key);
        tensorflow::RecvTensorResponse response;
        grpc::ClientContext context;
        ASSERT_TRUE(stub->RecvTensor(&context, request, &response).ok());
        request_bytes += request.ByteSizeLong();
        response_bytes += response.ByteSizeLong();
        std::string kind = "DT_FLOAT[";
        for (size_t i = 0; i < shape.size(); ++i) kind += (i ? "," : "") + std::to_string(shape[i]);
        ++expected_tensors[kind + "]"];
      }
      tensorflow::GetStatusRequest request;
      tensorflow::GetStatusResponse response;
      grpc::ClientContext context;
      ASSERT_TRUE(stub->GetStatus(&context, request, &response).ok());
      status_response_bytes += response.ByteSizeLong();
    }
  }
  server->Shutdown();
  server->Wait();
  stop.store(true);
  capture.join();
  ASSERT_TRUE(run_status.ok()) << run_status.ToString();

  const Profile profile = session.Finish("pcap", (*backend)->counters(), 0);
  const std::string dump = ProfileToJson(profile);
  EXPECT_EQ(profile.lost_events, 0u) << dump;
  EXPECT_EQ(profile.connections_joined_midway, 0u) << dump;
  auto find = [&](const std::string& method, MessageDirection direction) -> const MethodProfile* {
    for (const MethodProfile& m : profile.methods) {
      if (m.method == method && m.direction == direction) return &m;
    }
    return nullptr;
  };
  const std::string recv = "/tensorflow.WorkerService/RecvTensor";
  const MethodProfile* recv_requests = find(recv, MessageDirection::kRequest);
  const MethodProfile* recv_responses = find(recv, MessageDirection::kResponse);
  const MethodProfile* status_requests =
      find("/tensorflow.WorkerService/GetStatus", MessageDirection::kRequest);
  const MethodProfile* status_responses =
      find("/tensorflow.WorkerService/GetStatus", MessageDirection::kResponse);
  ASSERT_NE(recv_requests, nullptr) << dump;
  ASSERT_NE(recv_responses, nullptr) << dump;
  ASSERT_NE(status_requests, nullptr) << dump;
  ASSERT_NE(status_responses, nullptr) << dump;
  const uint64_t calls = shapes.size() * kRounds;
  EXPECT_EQ(recv_requests->messages, calls);
  EXPECT_EQ(recv_requests->bytes, request_bytes);
  EXPECT_EQ(recv_responses->messages, calls);
  EXPECT_EQ(recv_responses->bytes, response_bytes);
  EXPECT_EQ(recv_responses->tensors, expected_tensors);
  // {16} and {3,5,7} floats are small, {256,256} medium, {1024,512} large.
  EXPECT_EQ(recv_responses->classes.small.count, 3u * kRounds);
  EXPECT_EQ(recv_responses->classes.medium.count, 2u * kRounds);
  EXPECT_EQ(recv_responses->classes.large.count, 1u * kRounds);
  EXPECT_EQ(recv_responses->scheme, PayloadScheme::kSkew);
  EXPECT_EQ(status_requests->messages, static_cast<uint64_t>(kRounds));
  EXPECT_EQ(status_requests->bytes, 0u);
  EXPECT_EQ(status_responses->messages, static_cast<uint64_t>(kRounds));
  EXPECT_EQ(status_responses->bytes, status_response_bytes);
  EXPECT_EQ(profile.methods.size(), 4u) << dump;
  ASSERT_EQ(profile.connections.size(), 1u) << dump;
  EXPECT_EQ(profile.connections[0].server, "127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(profile.connections[0].roles_known);
}

}  // namespace
}  // namespace artune::probes
