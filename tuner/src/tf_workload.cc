// The built-in TensorFlow-like workload (tf_workload.h): its options' validation,
// and the run that starts the parameter servers (tf_servers.cc) and the worker
// threads (tf_workers.cc) over one model (tf_model.cc), reports progress and
// gathers the result.
#include "artune/tuner/tf_workload.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <thread>

#include "grpc_process.h"
#include "tf_cluster.h"

namespace artune::tuner {
namespace {

using Clock = tf::Clock;

constexpr uint64_t kMaxTensorBytes = 64ull << 20;

}  // namespace

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
  KeepGrpcUntilExit();  // its servers and workers going must not wait in grpc_shutdown
  const tf::Model model = tf::BuildModel(options);

  std::vector<std::unique_ptr<tf::ParameterServer>> services;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  TfWorkloadResult result;
  result.model_bytes = model.total_bytes;
  for (uint32_t task = 0; task < options.parameter_servers; ++task) {
    services.push_back(std::make_unique<tf::ParameterServer>(model, task));
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

  tf::RunState state;
  std::vector<std::unique_ptr<tf::Worker>> workers;
  for (uint32_t task = 0; task < options.workers; ++task) {
    workers.push_back(std::make_unique<tf::Worker>(task, model, result.parameter_server_addresses,
                                                   options, state));
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

uint64_t SmallVariableCount(const std::vector<TensorSpec>& variables) {
  uint64_t small = 0;
  for (const TensorSpec& tensor : variables) small += tensor.bytes() <= 1024;
  return small;
}

nlohmann::ordered_json TfWorkloadJson(const TfWorkloadOptions& options,
                                      const TfWorkloadResult& result, double scale) {
  nlohmann::ordered_json out;
  out["model"] = "resnet50";
  out["scale"] = scale;
  out["variables"] = options.variables.size();
  out["small_variables"] = SmallVariableCount(options.variables);
  out["model_bytes"] = result.model_bytes;
  out["parameter_servers"] = options.parameter_servers;
  out["workers"] = options.workers;
  out["addresses"] = result.parameter_server_addresses;
  out["steps"] = result.steps;
  out["recv_tensor_calls"] = result.recv_tensor_calls;
  out["tensor_bytes"] = result.tensor_bytes;
  out["duration_s"] = result.duration_s;
  out["steps_per_s"] = result.steps_per_s;
  out["tensor_mbps"] = result.tensor_mbps;
  out["step_ms"] = {{"p50", result.step_ms.p50},   {"p99", result.step_ms.p99},
                    {"mean", result.step_ms.mean}, {"min", result.step_ms.min},
                    {"max", result.step_ms.max},   {"samples", result.step_ms.count}};
  out["validated"] = result.validated;
  if (!result.validated) out["validation_error"] = result.validation_error;
  return out;
}

Status TfWorkloadStatus(const TfWorkloadResult& result) {
  if (result.validated) return Status::Ok();
  return Status::Corruption("a RecvTensor response failed validation: " + result.validation_error);
}

}  // namespace artune::tuner
