// The workers of the built-in TensorFlow-like workload: one thread per worker task,
// each with its own channels, pulling every variable every step with all of a
// step's RecvTensor calls in flight at once, and checking every tensor it gets.
#include <climits>
#include <condition_variable>
#include <span>

#include "artune/tuner/checksum.h"
#include "proto_wire.h"
#include "tf_cluster.h"

namespace artune::tuner::tf {
namespace {

using wire::AppendTag;
using wire::AppendVarint;
using wire::kLengthDelimited;
using wire::kVarint;
using wire::ProtoReader;

// Checks one RecvTensor response against the model; "" when it is right.
std::string CheckResponse(const grpc::ByteBuffer& response, const Model& model, size_t index,
                          uint64_t& content_bytes) {
  const std::string bytes = ByteBufferToString(response);
  ProtoReader reader(bytes);
  std::string_view tensor;
  while (reader.Next()) {
    if (reader.field() == 1) tensor = reader.bytes();
  }
  if (!reader.error().empty()) return "malformed RecvTensorResponse: " + reader.error();
  ProtoReader tensor_reader(tensor);
  std::string_view content;
  while (tensor_reader.Next()) {
    if (tensor_reader.field() == 4) content = tensor_reader.bytes();
  }
  const std::string& name = model.variables[index].name;
  if (!tensor_reader.error().empty()) return name + ": malformed TensorProto";
  if (content.size() != model.content[index].size()) {
    return name + ": " + std::to_string(content.size()) + " tensor bytes, expected " +
           std::to_string(model.content[index].size());
  }
  if (Checksum(std::as_bytes(std::span<const char>(content.data(), content.size()))) !=
      model.checksums[index]) {
    return name + ": tensor content checksum mismatch";
  }
  content_bytes = content.size();
  return "";
}

Status FromGrpc(const grpc::Status& status, const std::string& what) {
  const std::string message = what + ": " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Timeout(message + " (raise --timeout)");
    case grpc::StatusCode::UNAVAILABLE:
      return Status::Unavailable(message);
    default:
      return Status::IoError(message + " (grpc code " +
                             std::to_string(static_cast<int>(status.error_code())) + ")");
  }
}

}  // namespace

Worker::Worker(uint32_t task, const Model& model, const std::vector<std::string>& servers,
               const TfWorkloadOptions& options, RunState& state)
    : task_(task), model_(model), options_(options), state_(state) {
  for (const std::string& address : servers) {
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(INT_MAX);
    // Each worker its own TCP connections, as separate worker processes would have.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stubs_.push_back(std::make_unique<grpc::GenericStub>(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments)));
  }
  for (size_t i = 0; i < model.variables.size(); ++i) {
    const uint32_t ps = static_cast<uint32_t>(i % servers.size());
    std::string request;
    AppendTag(request, 2, kLengthDelimited);  // rendezvous_key
    const std::string key = RendezvousKey(ps, task_, model.variables[i].name);
    AppendVarint(request, key.size());
    request += key;
    requests_.push_back(std::move(request));
  }
}

void Worker::Run(Clock::time_point deadline) {
  if (!GetStatus()) return;
  for (uint64_t step = 1; !state_.stop.load(); ++step) {
    if (options_.steps != 0 && step > options_.steps) break;
    if (options_.duration_s > 0 && Clock::now() >= deadline) break;
    const auto start = Clock::now();
    if (!Step(step)) return;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    state_.steps.fetch_add(1);
    std::lock_guard lock(state_.mutex);
    state_.step_ms.push_back(ms);
  }
}

bool Worker::GetStatus() {
  for (size_t ps = 0; ps < stubs_.size(); ++ps) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(options_.timeout_ms));
    // GetStatusRequest has no fields: an empty (but valid) message.
    grpc::Slice empty;
    grpc::ByteBuffer request(&empty, 1), response;
    std::mutex mutex;
    std::condition_variable done_signal;
    bool done = false;
    grpc::Status result;
    stubs_[ps]->UnaryCall(&context, std::string(kGetStatusMethod), grpc::StubOptions(), &request,
                          &response, [&](grpc::Status status) {
                            std::lock_guard lock(mutex);
                            result = std::move(status);
                            done = true;
                            done_signal.notify_one();
                          });
    std::unique_lock lock(mutex);
    done_signal.wait(lock, [&] { return done; });
    if (!result.ok()) {
      state_.Fail(FromGrpc(result, "GetStatus from " + PsDevice(static_cast<uint32_t>(ps))), "");
      return false;
    }
  }
  return true;
}

bool Worker::Step(uint64_t step_id) {
  struct PendingCall {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };
  const size_t count = model_.variables.size();
  std::vector<std::unique_ptr<PendingCall>> calls(count);
  std::mutex mutex;
  std::condition_variable all_done;
  size_t remaining = count;
  bool ok = true;
  for (size_t i = 0; i < count; ++i) {
    calls[i] = std::make_unique<PendingCall>();
    PendingCall& call = *calls[i];
    call.context.set_deadline(std::chrono::system_clock::now() +
                              std::chrono::milliseconds(options_.timeout_ms));
    std::string body;
    AppendTag(body, 1, kVarint);  // step_id
    AppendVarint(body, step_id);
    body += requests_[i];
    grpc::Slice slice(body);
    call.request = grpc::ByteBuffer(&slice, 1);
    stubs_[i % stubs_.size()]->UnaryCall(
        &call.context, std::string(kRecvTensorMethod), grpc::StubOptions(), &call.request,
        &call.response, [&, i](grpc::Status status) {
          bool good = status.ok();
          if (!status.ok()) {
            state_.Fail(FromGrpc(status, "RecvTensor " + model_.variables[i].name), "");
          } else {
            uint64_t bytes = 0;
            std::string mismatch = CheckResponse(calls[i]->response, model_, i, bytes);
            if (mismatch.empty()) {
              state_.calls.fetch_add(1);
              state_.tensor_bytes.fetch_add(bytes);
            } else {
              good = false;
              state_.Fail(Status::Ok(), std::move(mismatch));
            }
          }
          std::lock_guard lock(mutex);
          ok = ok && good;
          if (--remaining == 0) all_done.notify_one();
        });
  }
  std::unique_lock lock(mutex);
  all_done.wait(lock, [&] { return remaining == 0; });
  return ok;
}

}  // namespace artune::tuner::tf
