// The probe backend flags that `artune probe` and `artune dashboard` share: one
// flag per backend (--pcap, --ebpf, --exec) with each backend's own options beside
// it, declared once so the two commands cannot drift apart.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/probes/backend.h"
#include "artune/status.h"

namespace artune::cli {

struct ProbeFlags {
  bool pcap = false;
  std::string interface;
  std::string read_file;
  uint16_t port = 0;
  std::string filter;
  bool ebpf = false;
  uint32_t pid = 0;
  std::string comm;
  bool decode = false;
  bool exec = false;
  bool keep_command = false;
  std::vector<std::string> command;

  bool AnyBackend() const { return pcap || ebpf || exec; }
};

// Adds the backend flags, their exclusions and dependencies to `command`.
// `exec_help` describes --exec for this command (where the command's output goes
// differs). `flags` must outlive the parse.
void AddProbeFlags(CLI::App& command, ProbeFlags& flags, const std::string& exec_help);

// The backend the flags select, or nullopt when none is given. Errors
// (kInvalidArgument) name `command_name`: two backends, or --exec without a
// command after `--`.
Result<std::optional<probes::BackendOptions>> BackendFromFlags(const ProbeFlags& flags,
                                                               std::string_view command_name);

// What a capture traced, for the store's `process` column: the pid or name for
// eBPF, the command line for --exec, nothing for pcap (it sees an interface).
std::string TracedProcess(const ProbeFlags& flags);

}  // namespace artune::cli
