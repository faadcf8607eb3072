// TensorFlow-like RecvTensor traffic with a known distribution, over a real gRPC
// C++ server and client: shared by the live pcap test (in-process) and the
// grpc_tensors helper program that the ebpf and preload tests trace.
//
// The traffic: kRounds rounds of RecvTensor calls for KnownShapes() (DT_FLOAT
// tensors of three size classes; the request's rendezvous key names the shape) and
// one GetStatus call. ExpectedTraffic() computes, without any RPC, what a capture
// must find; ExpectKnownDistribution() checks a profile against it exactly.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "artune/probes/profile.h"
#include "artune/probes/profile_output.h"
#include "worker.grpc.pb.h"

namespace artune::probes::testing {

inline constexpr int kTrafficRounds = 3;
inline const char* const kRecvTensorMethod = "/tensorflow.WorkerService/RecvTensor";
inline const char* const kGetStatusMethod = "/tensorflow.WorkerService/GetStatus";

// {16} and {3,5,7} floats are small, {256,256} medium, {1024,512} large.
inline std::vector<std::vector<int64_t>> KnownShapes() {
  return {{16}, {256, 256}, {1024, 512}, {16}, {3, 5, 7}, {256, 256}};
}

inline std::string ShapeKey(const std::vector<int64_t>& shape) {
  std::string key;
  for (int64_t size : shape) key += (key.empty() ? "" : ",") + std::to_string(size);
  return key;
}

inline tensorflow::TensorProto MakeTensor(const std::vector<int64_t>& shape) {
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

inline tensorflow::RecvTensorRequest MakeRequest(int round, const std::vector<int64_t>& shape) {
  tensorflow::RecvTensorRequest request;
  request.set_step_id(round + 1);
  request.set_rendezvous_key(ShapeKey(shape));
  return request;
}

inline void FillResponse(const tensorflow::RecvTensorRequest& request,
                         tensorflow::RecvTensorResponse* response) {
  std::vector<int64_t> shape;
  const std::string& key = request.rendezvous_key();
  size_t start = 0;
  while (start < key.size()) {
    size_t comma = key.find(',', start);
    if (comma == std::string::npos) comma = key.size();
    shape.push_back(std::stoll(key.substr(start, comma - start)));
    start = comma + 1;
  }
  *response->mutable_tensor() = MakeTensor(shape);
  response->set_send_start_micros(42);
}

// Answers RecvTensor with a tensor whose shape the rendezvous key names: "a,b,c".
class KnownWorker final : public tensorflow::WorkerService::Service {
 public:
  grpc::Status GetStatus(grpc::ServerContext*, const tensorflow::GetStatusRequest*,
                         tensorflow::GetStatusResponse* response) override {
    response->add_device_attributes("/job:ps/replica:0/task:0/device:CPU:0");
    return grpc::Status::OK;
  }
  grpc::Status RecvTensor(grpc::ServerContext*, const tensorflow::RecvTensorRequest* request,
                          tensorflow::RecvTensorResponse* response) override {
    FillResponse(*request, response);
    return grpc::Status::OK;
  }
};

// Starts a server on 127.0.0.1 (an ephemeral port, written to `port`).
inline std::unique_ptr<grpc::Server> StartKnownServer(KnownWorker& worker, int& port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&worker);
  builder.SetMaxSendMessageSize(16 << 20);
  return builder.BuildAndStart();
}

// Runs the known calls over one channel; false (and a message on stderr) when a
// call fails.
inline bool RunKnownTraffic(int port) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(16 << 20);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                           grpc::InsecureChannelCredentials(), arguments);
  auto stub = tensorflow::WorkerService::NewStub(channel);
  for (int round = 0; round < kTrafficRounds; ++round) {
    for (const auto& shape : KnownShapes()) {
      tensorflow::RecvTensorResponse response;
      grpc::ClientContext context;
      const grpc::Status status = stub->RecvTensor(&context, MakeRequest(round, shape), &response);
      if (!status.ok()) {
        std::fprintf(stderr, "RecvTensor failed: %s\n", status.error_message().c_str());
        return false;
      }
    }
    tensorflow::GetStatusRequest request;
    tensorflow::GetStatusResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub->GetStatus(&context, request, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "GetStatus failed: %s\n", status.error_message().c_str());
      return false;
    }
  }
  return true;
}

struct KnownTraffic {
  uint64_t recv_calls = 0;
  uint64_t request_bytes = 0;
  uint64_t response_bytes = 0;
  uint64_t status_calls = 0;
  uint64_t status_response_bytes = 0;
  std::map<std::string, uint64_t> tensors;  // "DT_FLOAT[256,256]" -> count
};

// What the calls of RunKnownTraffic() carry, from the same messages, without RPCs.
inline KnownTraffic ExpectedTraffic() {
  KnownTraffic expected;
  for (int round = 0; round < kTrafficRounds; ++round) {
    for (const auto& shape : KnownShapes()) {
      const tensorflow::RecvTensorRequest request = MakeRequest(round, shape);
      tensorflow::RecvTensorResponse response;
      FillResponse(request, &response);
      ++expected.recv_calls;
      expected.request_bytes += request.ByteSizeLong();
      expected.response_bytes += response.ByteSizeLong();
      ++expected.tensors["DT_FLOAT[" + ShapeKey(shape) + "]"];
    }
    tensorflow::GetStatusResponse response;
    response.add_device_attributes("/job:ps/replica:0/task:0/device:CPU:0");
    ++expected.status_calls;
    expected.status_response_bytes += response.ByteSizeLong();
  }
  return expected;
}

inline const MethodProfile* FindMethod(const Profile& profile, const std::string& method,
                                       MessageDirection direction) {
  for (const MethodProfile& m : profile.methods) {
    if (m.method == method && m.direction == direction) return &m;
  }
  return nullptr;
}

// The profile must hold exactly the known traffic, attributed per method.
inline void ExpectKnownDistribution(const Profile& profile) {
  const KnownTraffic expected = ExpectedTraffic();
  const std::string dump = ProfileToJson(profile);
  EXPECT_EQ(profile.lost_events, 0u) << dump;
  EXPECT_EQ(profile.connections_joined_midway, 0u) << dump;
  EXPECT_TRUE(profile.errors.empty()) << dump;
  const MethodProfile* recv_requests =
      FindMethod(profile, kRecvTensorMethod, MessageDirection::kRequest);
  const MethodProfile* recv_responses =
      FindMethod(profile, kRecvTensorMethod, MessageDirection::kResponse);
  const MethodProfile* status_requests =
      FindMethod(profile, kGetStatusMethod, MessageDirection::kRequest);
  const MethodProfile* status_responses =
      FindMethod(profile, kGetStatusMethod, MessageDirection::kResponse);
  ASSERT_NE(recv_requests, nullptr) << dump;
  ASSERT_NE(recv_responses, nullptr) << dump;
  ASSERT_NE(status_requests, nullptr) << dump;
  ASSERT_NE(status_responses, nullptr) << dump;
  EXPECT_EQ(recv_requests->messages, expected.recv_calls);
  EXPECT_EQ(recv_requests->bytes, expected.request_bytes);
  EXPECT_EQ(recv_responses->messages, expected.recv_calls);
  EXPECT_EQ(recv_responses->bytes, expected.response_bytes);
  EXPECT_EQ(recv_responses->tensors, expected.tensors);
  EXPECT_EQ(recv_responses->classes.small.count, 3u * kTrafficRounds);
  EXPECT_EQ(recv_responses->classes.medium.count, 2u * kTrafficRounds);
  EXPECT_EQ(recv_responses->classes.large.count, 1u * kTrafficRounds);
  EXPECT_EQ(recv_responses->scheme, PayloadScheme::kSkew);
  EXPECT_EQ(status_requests->messages, expected.status_calls);
  EXPECT_EQ(status_requests->bytes, 0u);
  EXPECT_EQ(status_responses->messages, expected.status_calls);
  EXPECT_EQ(status_responses->bytes, expected.status_response_bytes);
  // Call concurrency: every call start is sampled on the request row, none on the
  // response rows. The calls are sequential, but a syscall backend may decode a
  // response's end after the next request, so only the bounds are exact.
  EXPECT_EQ(recv_requests->inflight.samples, expected.recv_calls) << dump;
  EXPECT_EQ(status_requests->inflight.samples, expected.status_calls) << dump;
  const uint64_t all_calls = expected.recv_calls + expected.status_calls;
  for (const MethodProfile* requests : {recv_requests, status_requests}) {
    EXPECT_GE(requests->inflight.p50, 1u) << dump;
    EXPECT_LE(requests->inflight.p50, requests->inflight.p90) << dump;
    EXPECT_LE(requests->inflight.p90, requests->inflight.max) << dump;
    EXPECT_LE(requests->inflight.max, all_calls) << dump;
  }
  EXPECT_EQ(recv_responses->inflight.samples, 0u) << dump;
  EXPECT_EQ(status_responses->inflight.samples, 0u) << dump;
  EXPECT_EQ(profile.methods.size(), 4u) << dump;
  ASSERT_EQ(profile.connections.size(), 1u) << dump;
  EXPECT_TRUE(profile.connections[0].roles_known);
}

}  // namespace artune::probes::testing
