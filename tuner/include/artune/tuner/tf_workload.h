// A built-in TensorFlow-like training workload: real gRPC C++ parameter servers and
// workers on loopback, speaking TensorFlow's worker service the way a PS-style
// training job does. Every step, each worker pulls every model variable from the
// parameter server that holds it with `/tensorflow.WorkerService/RecvTensor`, all
// of a step's calls in flight at once (TensorFlow's rendezvous issues them
// together).
//
// Wire format: the requests are RecvTensorRequest protobufs; the responses are
// RecvTensorResponse protobufs encoded the way TensorFlow's gRPC tensor coding
// does it — a small header slice (the response and TensorProto fields) followed,
// for a tensor over 1 KiB, by the tensor bytes as their own zero-copy slice. So the
// server's sendmsg carries the iovec list a real parameter server's does, and the
// probes decode it as real RecvTensor traffic (field numbers of
// proto/tensorflow/worker.proto, which match TensorFlow's).
//
// Validation: tensor content is deterministic (FillDeterministic, payload.h); every
// response's tensor bytes are checked by checksum. A mismatch stops the run and is
// reported in the result (validated = false), not as an error Status.
//
// Threading: RunTfWorkload blocks the calling thread; it runs one thread per worker
// plus gRPC's own threads. Progress callbacks run on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artune/status.h"
#include "artune/tuner/stats.h"

namespace artune::tuner {

inline constexpr std::string_view kRecvTensorMethod = "/tensorflow.WorkerService/RecvTensor";
inline constexpr std::string_view kGetStatusMethod = "/tensorflow.WorkerService/GetStatus";

// One model variable: float32 with this shape.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t bytes() const;  // 4 * product of the dims
};

// The variables of ResNet-50 (v1, ImageNet head): 53 convolution kernels, the
// batch-norm gamma, beta, moving mean and moving variance of each (212 vectors of
// 64..2048 floats), and the 2048x1000 fully connected layer with its bias: 267
// tensors, about 25.6 M parameters (~98 MiB). A mix of many small vectors
// (256 B .. 8 KiB) and large kernels (16 KiB .. 9 MiB), which is what makes the
// eager/rendezvous crossover matter.
std::vector<TensorSpec> ResNet50Variables();
// The same list with every dimension of every kernel scaled so that the model
// holds about `fraction` of its bytes (vectors keep their sizes: they are what
// stays small). For short runs on slow machines; fraction in (0, 1].
std::vector<TensorSpec> ScaledResNet50Variables(double fraction);

struct TfWorkloadOptions {
  uint32_t parameter_servers = 1;  // variables are placed round-robin over them
  uint32_t workers = 2;
  // The run ends after `steps` steps per worker (0: no limit) or `duration_s`
  // seconds (0: no limit), whichever comes first; at least one must be set.
  uint64_t steps = 0;
  double duration_s = 10;
  std::vector<TensorSpec> variables = ResNet50Variables();
  uint64_t seed = 1;  // tensor content
  // Per-call deadline.
  uint32_t timeout_ms = 30000;
  // Called about every 100 ms with (steps done by all workers, seconds elapsed).
  std::function<void(uint64_t steps, double elapsed_s)> progress;
};

// kInvalidArgument naming the field: no servers or workers (or more than 64), no
// variables, an empty shape or a non-positive dimension, a tensor over 64 MiB,
// neither steps nor duration, a negative duration.
Status ValidateTfWorkload(const TfWorkloadOptions& options);

struct TfWorkloadResult {
  uint64_t steps = 0;              // completed by all workers together
  uint64_t recv_tensor_calls = 0;  // completed and validated
  uint64_t tensor_bytes = 0;       // tensor content bytes received
  uint64_t model_bytes = 0;        // bytes of one copy of the variables
  double duration_s = 0;           // wall clock, first call to last reply
  Summary step_ms;                 // per worker step, milliseconds
  double steps_per_s = 0;          // all workers together
  double tensor_mbps = 0;          // tensor bytes / duration, 10^6 bytes/s
  bool validated = false;
  std::string validation_error;  // the first mismatch
  std::vector<std::string> parameter_server_addresses;
};

// Starts the parameter servers on 127.0.0.1 (free ports), runs the workers, shuts
// everything down and returns the summary. Errors: kInvalidArgument (options),
// kUnavailable (a server cannot listen), kTimeout / kIoError (a call failed).
Result<TfWorkloadResult> RunTfWorkload(const TfWorkloadOptions& options);

// Variables of at most 1 KiB: sent in the header slice.
uint64_t SmallVariableCount(const std::vector<TensorSpec>& variables);

// `artune workload --json`: model, scale, variables, small_variables, model_bytes,
// parameter_servers, workers, addresses, steps, recv_tensor_calls, tensor_bytes,
// duration_s, steps_per_s, tensor_mbps, step_ms {p50, p99, mean, min, max,
// samples}, validated and, when not, validation_error.
nlohmann::ordered_json TfWorkloadJson(const TfWorkloadOptions& options,
                                      const TfWorkloadResult& result, double scale);

// kCorruption naming the validation error when a RecvTensor response failed it.
Status TfWorkloadStatus(const TfWorkloadResult& result);

}  // namespace artune::tuner
