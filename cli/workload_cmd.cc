// artune workload: the built-in TensorFlow-like training workload (real gRPC C++
// parameter servers and workers on 127.0.0.1, RecvTensor of every ResNet-50
// variable every step). Something real to probe, and to time under two configs.
// Thin over artune/tuner/tf_workload.h.
#include <cstdio>
#include <iostream>

#include "artune/report/bench_text.h"
#include "artune/tuner/tf_workload.h"
#include "command.h"

namespace artune::cli {
namespace {

struct WorkloadFlags {
  uint32_t parameter_servers = 1;
  uint32_t workers = 2;
  uint64_t steps = 0;
  double duration_s = 10;
  double scale = 1.0;
  uint64_t seed = 1;
  uint32_t timeout_ms = 30000;
  bool json = false;
};

Status Workload(const WorkloadFlags& flags, Context& context) {
  tuner::TfWorkloadOptions options;
  options.parameter_servers = flags.parameter_servers;
  options.workers = flags.workers;
  options.steps = flags.steps;
  options.duration_s = flags.duration_s;
  if (!(flags.scale > 0 && flags.scale <= 1)) {
    return Status::InvalidArgument("--scale " + std::to_string(flags.scale) +
                                   " is outside (0, 1]; 1 is the full ResNet-50");
  }
  options.variables = tuner::ScaledResNet50Variables(flags.scale);
  options.seed = flags.seed;
  options.timeout_ms = flags.timeout_ms;
  ARTUNE_RETURN_IF_ERROR(tuner::ValidateTfWorkload(options));

  // One status line redrawn on stderr while it is a terminal (and not --quiet).
  if (ShowProgress(context)) {
    options.progress = [&flags](uint64_t steps, double elapsed_s) {
      std::fprintf(stderr, "\r\033[Kworkload: %llu steps, %.1f s",
                   static_cast<unsigned long long>(steps), elapsed_s);
      if (flags.duration_s > 0) std::fprintf(stderr, " of %.1f s", flags.duration_s);
      std::fflush(stderr);
    };
  }
  auto run = tuner::RunTfWorkload(options);
  if (options.progress) std::fprintf(stderr, "\r\033[K");
  ARTUNE_ASSIGN_OR_RETURN(tuner::TfWorkloadResult result, std::move(run));

  if (flags.json) {
    std::cout << tuner::TfWorkloadJson(options, result, flags.scale).dump(2) << "\n";
  } else {
    report::PrintTfWorkloadText(options, result, flags.scale, std::cout);
  }
  return tuner::TfWorkloadStatus(result);
}

}  // namespace

void RegisterWorkload(CLI::App& root, Context& context) {
  auto flags = std::make_shared<WorkloadFlags>();
  auto* command = root.add_subcommand(
      "workload",
      "Run the built-in TensorFlow-like workload: gRPC parameter servers and workers on "
      "127.0.0.1 pulling every ResNet-50 variable each step with "
      "/tensorflow.WorkerService/RecvTensor");
  command->add_option("--ps", flags->parameter_servers, "Parameter servers (variables round-robin)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  command->add_option("--workers", flags->workers, "Workers (each pulls the whole model per step)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  command->add_option("--steps", flags->steps, "Steps per worker (0: until --duration)")
      ->capture_default_str();
  command
      ->add_option("--duration", flags->duration_s,
                   "Seconds to run (0: until --steps); with both, whichever comes first")
      ->capture_default_str();
  command
      ->add_option("--scale", flags->scale,
                   "Fraction of the kernels' bytes to keep (0 < x <= 1; vectors keep their "
                   "size), for short runs on slow machines")
      ->capture_default_str();
  command->add_option("--seed", flags->seed, "Tensor content seed")->capture_default_str();
  command->add_option("--timeout", flags->timeout_ms, "Per-call deadline, ms")
      ->check(CLI::Range(1u, 3600000u))
      ->capture_default_str();
  command->add_flag("--json", flags->json, "Print one JSON object instead of text");
  command->footer(
      "Every tensor is checked by checksum on arrival (exit code 3 on a mismatch).\n"
      "Examples:\n"
      "  artune workload --duration 5\n"
      "  artune probe --exec -- artune workload --steps 3 --scale 0.25\n"
      "  artune workload --ps 2 --workers 4 --steps 10 --json");
  command->callback([flags, &context] {
    RunCommand(context, [&]() -> Status { return Workload(*flags, context); });
  });
}

}  // namespace artune::cli
