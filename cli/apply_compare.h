// `artune apply compare`: re-runs a workload (a stored capture's replay, or a
// TF-gRPC-Bench scheme) over the embedded transport under two configs — the
// transport's defaults and the tuned config — and prints both side by side.
// Registered under `artune apply` by RegisterApply (apply_cmd.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "command.h"

namespace artune::cli {

void AddApplyCompare(CLI::App& apply, Context& context);

}  // namespace artune::cli
