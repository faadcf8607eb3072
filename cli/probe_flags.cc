#include "probe_flags.h"

namespace artune::cli {

void AddProbeFlags(CLI::App& command, ProbeFlags& flags, const std::string& exec_help) {
  auto* pcap = command.add_flag("--pcap", flags.pcap,
                                "Backend: libpcap (live interface or saved capture file)");
  auto* iface = command.add_option("--iface", flags.interface,
                                   "pcap: capture live on this interface (e.g. lo)");
  auto* read = command
                   .add_option("--read", flags.read_file,
                               "pcap: read a saved pcap/pcapng file instead of capturing")
                   ->check(CLI::ExistingFile);
  auto* port = command
                   .add_option("--port", flags.port,
                               "pcap: the gRPC server's TCP port (filter \"tcp port N\")")
                   ->check(CLI::Range(1, 65535));
  auto* filter = command.add_option("--filter", flags.filter,
                                    "pcap: a pcap filter expression instead of --port");
  iface->excludes(read);
  port->excludes(filter);
  for (auto* option : {iface, read, port, filter}) option->needs(pcap);
  auto* ebpf = command.add_flag(
      "--ebpf", flags.ebpf,
      "Backend: eBPF syscall tracepoints of one process, exact iovec lists (root or "
      "CAP_BPF+CAP_PERFMON)");
  auto* pid = command.add_option("--pid", flags.pid, "ebpf: trace this process")
                  ->check(CLI::Range(1u, 4194304u));
  auto* comm = command.add_option("--comm", flags.comm,
                                  "ebpf: trace processes with this name (/proc/PID/comm)");
  auto* decode = command.add_flag(
      "--decode", flags.decode,
      "ebpf: also copy the transferred bytes to decode HTTP/2 + gRPC messages (costs a copy "
      "of all traffic)");
  pid->excludes(comm);
  for (auto* option : {pid, comm, decode}) option->needs(ebpf);
  auto* exec = command.add_flag("--exec", flags.exec, exec_help);
  command.add_option("command", flags.command, "--exec: the command and its arguments")
      ->type_name("CMD ARGS");
  command
      .add_flag("--keep-command", flags.keep_command,
                "exec: let the command (and what it started) run on when the probe stops or "
                "is killed; by default its process group ends with the probe")
      ->needs(exec);
  for (auto* flag : {pcap, ebpf}) flag->excludes(exec);
  pcap->excludes(ebpf);
}

Result<std::optional<probes::BackendOptions>> BackendFromFlags(const ProbeFlags& flags,
                                                               std::string_view command_name) {
  const std::string name(command_name);
  if (flags.pcap + flags.ebpf + flags.exec > 1) {
    return Status::InvalidArgument(
        name +
        ": choose one backend: --pcap, --ebpf --pid PID|--comm NAME, or --exec -- CMD "
        "ARGS (see --help)");
  }
  probes::BackendOptions options;
  if (flags.pcap) {
    options.kind = probes::BackendKind::kPcap;
    options.pcap.interface = flags.interface;
    options.pcap.read_file = flags.read_file;
    options.pcap.filter = flags.filter;
    if (flags.port != 0) options.pcap.port = flags.port;
  } else if (flags.ebpf) {
    options.kind = probes::BackendKind::kEbpf;
    if (flags.pid != 0) options.ebpf.pid = flags.pid;
    options.ebpf.comm = flags.comm;
    options.ebpf.decode = flags.decode;
  } else if (flags.exec) {
    if (flags.command.empty()) {
      return Status::InvalidArgument("--exec needs a command after --: " + name +
                                     " --exec -- CMD ARGS");
    }
    options.kind = probes::BackendKind::kPreload;
    options.preload.command = flags.command;
    options.preload.command_outlives_probe = flags.keep_command;
  } else {
    return std::optional<probes::BackendOptions>();
  }
  return std::optional<probes::BackendOptions>(options);
}

std::string TracedProcess(const ProbeFlags& flags) {
  if (flags.ebpf) return flags.pid != 0 ? std::to_string(flags.pid) : flags.comm;
  if (!flags.exec) return "";
  std::string command_line;
  for (const std::string& word : flags.command) {
    if (!command_line.empty()) command_line += ' ';
    command_line += word;
  }
  return command_line;
}

}  // namespace artune::cli
