// The parameter servers of the built-in TensorFlow-like workload: gRPC C++
// callback generic services answering GetStatus and RecvTensor the way TensorFlow's
// do, and TensorFlow's device names and rendezvous keys on the wire.
#include <chrono>

#include "proto_wire.h"
#include "tf_cluster.h"

namespace artune::tuner::tf {
namespace {

using wire::AppendBytesField;
using wire::AppendTag;
using wire::AppendVarint;
using wire::kLengthDelimited;
using wire::kVarint;
using wire::ProtoReader;

// TensorFlow's gRPC tensor coding sends tensors above this many bytes as their own
// slice, referencing the tensor's buffer; smaller ones are copied into the header.
constexpr uint64_t kLargeTensorBytes = 1024;
constexpr int kDtFloat = 1;  // tensorflow.DataType.DT_FLOAT

}  // namespace

std::string PsDevice(uint32_t task) {
  return "/job:ps/replica:0/task:" + std::to_string(task) + "/device:CPU:0";
}

std::string RendezvousKey(uint32_t ps_task, uint32_t worker_task, const std::string& name) {
  return PsDevice(ps_task) +
         ";0000000000000001;/job:worker/replica:0/task:" + std::to_string(worker_task) +
         "/device:CPU:0;" + name + ";0:0";
}

std::string VariableNameOfKey(std::string_view key) {
  for (int i = 0; i < 3; ++i) {
    const size_t semicolon = key.find(';');
    if (semicolon == std::string_view::npos) return "";
    key.remove_prefix(semicolon + 1);
  }
  return std::string(key.substr(0, key.find(';')));
}

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Valid() || !buffer.Dump(&slices).ok()) return out;
  out.reserve(buffer.Length());
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

// One unary call on the generic (bidi) API: read the request, write and finish.
class ParameterServer::Call final : public grpc::ServerGenericBidiReactor {
 public:
  Call(const ParameterServer* server, grpc::GenericCallbackServerContext* context)
      : server_(server), context_(context) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request message"));
      return;
    }
    const grpc::Status status = server_->Answer(context_->method(), request_, response_);
    if (!status.ok()) {
      Finish(status);
      return;
    }
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  const ParameterServer* server_;
  grpc::GenericCallbackServerContext* context_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

grpc::ServerGenericBidiReactor* ParameterServer::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  return new Call(this, context);
}

grpc::Status ParameterServer::Answer(const std::string& method, const grpc::ByteBuffer& request,
                                     grpc::ByteBuffer& response) const {
  if (method == kGetStatusMethod) {
    std::string body;
    AppendBytesField(body, 1, PsDevice(task_));  // device_attributes
    grpc::Slice slice(body);
    response = grpc::ByteBuffer(&slice, 1);
    return grpc::Status::OK;
  }
  if (method != kRecvTensorMethod) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no method " + method);
  }
  const std::string request_bytes = ByteBufferToString(request);
  ProtoReader reader(request_bytes);
  std::string key;
  while (reader.Next()) {
    if (reader.field() == 2) key = std::string(reader.bytes());  // rendezvous_key
  }
  const auto found = model_.index_by_name.find(VariableNameOfKey(key));
  if (!reader.error().empty() || found == model_.index_by_name.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no variable for key '" + key + "'");
  }
  const TensorSpec& spec = model_.variables[found->second];
  const std::string& content = model_.content[found->second];

  // TensorProto fields before the content: dtype, shape, then the content's tag.
  std::string shape;
  for (int64_t size : spec.shape) {
    std::string dim;
    AppendTag(dim, 1, kVarint);
    AppendVarint(dim, static_cast<uint64_t>(size));
    AppendBytesField(shape, 2, dim);
  }
  std::string tensor_head;
  AppendTag(tensor_head, 1, kVarint);
  AppendVarint(tensor_head, kDtFloat);
  AppendBytesField(tensor_head, 2, shape);
  AppendTag(tensor_head, 4, kLengthDelimited);
  AppendVarint(tensor_head, content.size());

  std::string header;
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  AppendTag(header, 3, kVarint);  // send_start_micros
  AppendVarint(header, static_cast<uint64_t>(now_us));
  AppendTag(header, 1, kLengthDelimited);  // tensor
  AppendVarint(header, tensor_head.size() + content.size());
  header += tensor_head;
  if (content.size() <= kLargeTensorBytes) {
    header += content;
    grpc::Slice slice(header);
    response = grpc::ByteBuffer(&slice, 1);
  } else {
    // The tensor bytes go out from the model's memory, without a copy.
    grpc::Slice slices[2] = {grpc::Slice(header), grpc::Slice(content.data(), content.size(),
                                                              grpc::Slice::STATIC_SLICE)};
    response = grpc::ByteBuffer(slices, 2);
  }
  return grpc::Status::OK;
}

}  // namespace artune::tuner::tf
