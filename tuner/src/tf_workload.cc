// The built-in TensorFlow-like workload: gRPC C++ parameter servers (callback
// generic service) answering RecvTensor with TensorFlow's slice layout, and worker
// threads pulling every variable every step.
#include "artune/tuner/tf_workload.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "artune/tuner/checksum.h"
#include "artune/tuner/payload.h"
#include "proto_wire.h"

namespace artune::tuner {
namespace {

using Clock = std::chrono::steady_clock;
using wire::AppendBytesField;
using wire::AppendTag;
using wire::AppendVarint;
using wire::kLengthDelimited;
using wire::kVarint;
using wire::ProtoReader;

// TensorFlow's gRPC tensor coding sends tensors above this many bytes as their own
// slice, referencing the tensor's buffer; smaller ones are copied into the header.
constexpr uint64_t kLargeTensorBytes = 1024;
constexpr uint64_t kMaxTensorBytes = 64ull << 20;
constexpr int kDtFloat = 1;  // tensorflow.DataType.DT_FLOAT

std::string PsDevice(uint32_t task) {
  return "/job:ps/replica:0/task:" + std::to_string(task) + "/device:CPU:0";
}

// TensorFlow's rendezvous key: src device; src incarnation; dst device; name; frame.
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

// The model: one content buffer per variable, shared by the servers (which send
// it) and the workers (which check what arrives against its checksum).
struct Model {
  std::vector<TensorSpec> variables;
  std::vector<std::string> content;
  std::vector<uint64_t> checksums;
  std::map<std::string, size_t, std::less<>> index_by_name;
  uint64_t total_bytes = 0;
};

Model BuildModel(const TfWorkloadOptions& options) {
  Model model;
  model.variables = options.variables;
  for (size_t i = 0; i < model.variables.size(); ++i) {
    std::string content(model.variables[i].bytes(), '\0');
    FillDeterministic(std::as_writable_bytes(std::span<char>(content)), options.seed, i);
    model.checksums.push_back(Checksum(std::as_bytes(std::span<const char>(content))));
    model.total_bytes += content.size();
    model.content.push_back(std::move(content));
    model.index_by_name.emplace(model.variables[i].name, i);
  }
  return model;
}

// --- parameter server ----------------------------------------------------------

class ParameterServer final : public grpc::CallbackGenericService {
 public:
  ParameterServer(const Model& model, uint32_t task) : model_(model), task_(task) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    return new Call(this, context);
  }

  // The response to one call, or an error status.
  grpc::Status Answer(const std::string& method, const grpc::ByteBuffer& request,
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

 private:
  // One unary call on the generic (bidi) API: read the request, write and finish.
  class Call final : public grpc::ServerGenericBidiReactor {
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

  const Model& model_;
  uint32_t task_;
};

// --- workers ---------------------------------------------------------------------

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

// Shared by the worker threads and the thread that runs the workload.
struct RunState {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> steps{0};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> tensor_bytes{0};
  std::mutex mutex;
  Status error;                  // first transport error
  std::string validation_error;  // first mismatch
  std::vector<double> step_ms;

  void Fail(Status status, std::string mismatch) {
    std::lock_guard lock(mutex);
    if (!status.ok() && error.ok()) error = std::move(status);
    if (!mismatch.empty() && validation_error.empty()) validation_error = std::move(mismatch);
    stop.store(true);
  }
};

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

class Worker {
 public:
  Worker(uint32_t task, const Model& model, const std::vector<std::string>& servers,
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

  void Run(Clock::time_point deadline) {
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

 private:
  // A worker asks each parameter server for its status once, as TensorFlow's
  // master does when a session starts.
  bool GetStatus() {
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

  // One training step: every variable pulled, all calls in flight together.
  bool Step(uint64_t step_id) {
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

  uint32_t task_;
  const Model& model_;
  const TfWorkloadOptions& options_;
  RunState& state_;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs_;
  std::vector<std::string> requests_;  // per variable, without the step id
};

TensorSpec Kernel(const std::string& name, int64_t k, int64_t in, int64_t out) {
  return {name + "/kernel", {k, k, in, out}};
}

// A convolution and its batch norm.
void AddConv(std::vector<TensorSpec>& variables, const std::string& name, int64_t k, int64_t in,
             int64_t out) {
  variables.push_back(Kernel(name, k, in, out));
  for (const char* part : {"gamma", "beta", "moving_mean", "moving_variance"}) {
    variables.push_back({name + "/bn/" + part, {out}});
  }
}

}  // namespace

uint64_t TensorSpec::bytes() const {
  uint64_t elements = 1;
  for (int64_t size : shape) elements *= static_cast<uint64_t>(size);
  return elements * sizeof(float);
}

std::vector<TensorSpec> ResNet50Variables() {
  std::vector<TensorSpec> variables;
  AddConv(variables, "conv1", 7, 3, 64);
  struct Stage {
    int blocks;
    int64_t mid;
  };
  const Stage stages[] = {{3, 64}, {4, 128}, {6, 256}, {3, 512}};
  int64_t in = 64;
  for (int s = 0; s < 4; ++s) {
    const int64_t mid = stages[s].mid;
    const int64_t out = mid * 4;
    for (int b = 0; b < stages[s].blocks; ++b) {
      const std::string block = "conv" + std::to_string(s + 2) + "_block" + std::to_string(b + 1);
      if (b == 0) AddConv(variables, block + "/shortcut", 1, in, out);
      AddConv(variables, block + "/1", 1, b == 0 ? in : out, mid);
      AddConv(variables, block + "/2", 3, mid, mid);
      AddConv(variables, block + "/3", 1, mid, out);
    }
    in = out;
  }
  variables.push_back({"fc1000/kernel", {2048, 1000}});
  variables.push_back({"fc1000/bias", {1000}});
  return variables;
}

std::vector<TensorSpec> ScaledResNet50Variables(double fraction) {
  std::vector<TensorSpec> variables = ResNet50Variables();
  if (!(fraction > 0) || fraction >= 1) return variables;
  for (TensorSpec& tensor : variables) {
    if (tensor.shape.size() < 2) continue;  // vectors keep their size
    int64_t& last = tensor.shape.back();
    last = std::max<int64_t>(1, static_cast<int64_t>(std::llround(last * fraction)));
  }
  return variables;
}

Status ValidateTfWorkload(const TfWorkloadOptions& options) {
  if (options.parameter_servers == 0 || options.parameter_servers > 64) {
    return Status::InvalidArgument(
        "parameter servers: " + std::to_string(options.parameter_servers) + " is outside 1..64");
  }
  if (options.workers == 0 || options.workers > 64) {
    return Status::InvalidArgument("workers: " + std::to_string(options.workers) +
                                   " is outside 1..64");
  }
  if (options.variables.empty()) return Status::InvalidArgument("the model has no variables");
  for (const TensorSpec& tensor : options.variables) {
    if (tensor.shape.empty()) {
      return Status::InvalidArgument("variable " + tensor.name + " has an empty shape");
    }
    for (int64_t size : tensor.shape) {
      if (size <= 0 || size > (int64_t{1} << 30)) {
        return Status::InvalidArgument("variable " + tensor.name + " has dimension " +
                                       std::to_string(size) + "; dimensions are 1..2^30");
      }
    }
    if (tensor.bytes() > kMaxTensorBytes) {
      return Status::InvalidArgument("variable " + tensor.name + " has " +
                                     std::to_string(tensor.bytes()) +
                                     " bytes; at most 64 MiB per tensor");
    }
  }
  if (options.duration_s < 0 || !std::isfinite(options.duration_s)) {
    return Status::InvalidArgument("duration: " + std::to_string(options.duration_s) +
                                   " s; give a positive number of seconds");
  }
  if (options.steps == 0 && options.duration_s == 0) {
    return Status::InvalidArgument("give a number of steps, a duration, or both");
  }
  if (options.timeout_ms == 0) return Status::InvalidArgument("timeout: must be positive");
  return Status::Ok();
}

Result<TfWorkloadResult> RunTfWorkload(const TfWorkloadOptions& options) {
  ARTUNE_RETURN_IF_ERROR(ValidateTfWorkload(options));
  const Model model = BuildModel(options);

  std::vector<std::unique_ptr<ParameterServer>> services;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  TfWorkloadResult result;
  result.model_bytes = model.total_bytes;
  for (uint32_t task = 0; task < options.parameter_servers; ++task) {
    services.push_back(std::make_unique<ParameterServer>(model, task));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterCallbackGenericService(services.back().get());
    builder.SetMaxReceiveMessageSize(INT_MAX);
    builder.SetMaxSendMessageSize(INT_MAX);
    servers.push_back(builder.BuildAndStart());
    if (!servers.back() || port == 0) {
      return Status::Unavailable("parameter server " + std::to_string(task) +
                                 " cannot listen on 127.0.0.1");
    }
    result.parameter_server_addresses.push_back("127.0.0.1:" + std::to_string(port));
  }
  auto shutdown = [&servers] {
    for (auto& server : servers) {
      server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      server->Wait();
    }
  };

  RunState state;
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t task = 0; task < options.workers; ++task) {
    workers.push_back(
        std::make_unique<Worker>(task, model, result.parameter_server_addresses, options, state));
  }
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(options.duration_s > 0 ? options.duration_s : 0));
  std::atomic<uint32_t> running{options.workers};
  std::vector<std::thread> threads;
  for (auto& worker : workers) {
    threads.emplace_back([&, w = worker.get()] {
      w->Run(deadline);
      running.fetch_sub(1);
    });
  }
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (options.progress) {
      options.progress(state.steps.load(),
                       std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  for (auto& thread : threads) thread.join();
  result.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  workers.clear();
  shutdown();

  if (!state.error.ok()) return state.error;
  result.steps = state.steps.load();
  result.recv_tensor_calls = state.calls.load();
  result.tensor_bytes = state.tensor_bytes.load();
  result.step_ms = Summarize(state.step_ms);
  if (result.duration_s > 0) {
    result.steps_per_s = static_cast<double>(result.steps) / result.duration_s;
    result.tensor_mbps = static_cast<double>(result.tensor_bytes) / result.duration_s / 1e6;
  }
  result.validated = state.validation_error.empty();
  result.validation_error = state.validation_error;
  return result;
}

}  // namespace artune::tuner
