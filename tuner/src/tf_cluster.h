// The pieces of the built-in TensorFlow-like workload (artune/tuner/tf_workload.h)
// that its files share; private to the tuner library. Who owns what:
//   tf_model.cc     the model table (ResNet-50's variables) and its content buffers;
//   tf_servers.cc   the parameter servers and TensorFlow's names on the wire;
//   tf_workers.cc   the worker threads that pull every variable every step;
//   tf_workload.cc  the options' validation and the run that ties them together.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"
#include "artune/tuner/tf_workload.h"

namespace artune::tuner::tf {

using Clock = std::chrono::steady_clock;

// --- the model (tf_model.cc) ---------------------------------------------------

// The model: one content buffer per variable, shared by the servers (which send
// it) and the workers (which check what arrives against its checksum).
struct Model {
  std::vector<TensorSpec> variables;
  std::vector<std::string> content;
  std::vector<uint64_t> checksums;
  std::map<std::string, size_t, std::less<>> index_by_name;
  uint64_t total_bytes = 0;
};

Model BuildModel(const TfWorkloadOptions& options);

// --- names on the wire and the parameter servers (tf_servers.cc) ---------------

// "/job:ps/replica:0/task:N/device:CPU:0"
std::string PsDevice(uint32_t task);
// TensorFlow's rendezvous key: src device; src incarnation; dst device; name; frame.
std::string RendezvousKey(uint32_t ps_task, uint32_t worker_task, const std::string& name);
// The variable name inside a rendezvous key; "" when the key has too few parts.
std::string VariableNameOfKey(std::string_view key);
// Every slice of `buffer` in one string; "" for an invalid buffer.
std::string ByteBufferToString(const grpc::ByteBuffer& buffer);

// One parameter server task: answers GetStatus, and RecvTensor with TensorFlow's
// slice layout (a header slice, then a large tensor's bytes as their own slice).
class ParameterServer final : public grpc::CallbackGenericService {
 public:
  ParameterServer(const Model& model, uint32_t task) : model_(model), task_(task) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;

  // The response to one call, or an error status.
  grpc::Status Answer(const std::string& method, const grpc::ByteBuffer& request,
                      grpc::ByteBuffer& response) const;

 private:
  class Call;

  const Model& model_;
  uint32_t task_;
};

// --- the workers (tf_workers.cc) -------------------------------------------------

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

// One worker task: its own channel to every parameter server, and one training
// step after another until the run's steps, its deadline or a failure.
class Worker {
 public:
  Worker(uint32_t task, const Model& model, const std::vector<std::string>& servers,
         const TfWorkloadOptions& options, RunState& state);

  void Run(Clock::time_point deadline);

 private:
  // A worker asks each parameter server for its status once, as TensorFlow's
  // master does when a session starts.
  bool GetStatus();
  // One training step: every variable pulled, all calls in flight together.
  bool Step(uint64_t step_id);

  uint32_t task_;
  const Model& model_;
  const TfWorkloadOptions& options_;
  RunState& state_;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs_;
  std::vector<std::string> requests_;  // per variable, without the step id
};

}  // namespace artune::tuner::tf
