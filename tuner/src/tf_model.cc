// The model table of the built-in TensorFlow-like workload: ResNet-50's variables
// (and a scaled-down copy for short runs), and the content buffers and checksums
// the servers send and the workers check.
#include <algorithm>
#include <cmath>
#include <span>

#include "artune/tuner/checksum.h"
#include "artune/tuner/payload.h"
#include "artune/tuner/tf_workload.h"
#include "tf_cluster.h"

namespace artune::tuner {
namespace {

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

namespace tf {

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

}  // namespace tf
}  // namespace artune::tuner
