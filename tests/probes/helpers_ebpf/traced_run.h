// Test support shared by the ebpf and preload backend tests: a sink that keeps
// every event, starting the iovec_traffic helper, and the check that a backend
// recovered IovecScript() exactly.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../temp_dir.h"
#include "artune/probes/backend.h"
#include "artune/probes/event.h"
#include "iovec_script.h"

namespace artune::probes::testing {

class CollectingSink : public EventSink {
 public:
  void OnFlowOpen(const FlowKey& flow, FlowOrigin origin, uint64_t) override {
    opened[flow] = origin;
  }
  void OnStreamBytes(const StreamSegment& segment) override {
    auto& bytes = streams[segment.flow];
    bytes.insert(bytes.end(), segment.bytes.begin(), segment.bytes.end());
  }
  void OnStreamGap(const FlowKey& flow, uint64_t missing, uint64_t) override {
    gaps[flow] += missing;
  }
  void OnFlowClose(const FlowKey& flow, FlowEnd end, uint64_t) override { closed[flow] = end; }
  void OnIoCall(const IoCallEvent& event) override { calls.push_back(event); }

  std::vector<IoCallEvent> SendCalls() const {
    std::vector<IoCallEvent> sends;
    for (const auto& call : calls)
      if (IsSendSyscall(call.syscall)) sends.push_back(call);
    return sends;
  }

  std::map<FlowKey, FlowOrigin> opened;
  std::map<FlowKey, FlowEnd> closed;
  std::map<FlowKey, std::vector<uint8_t>> streams;
  std::map<FlowKey, uint64_t> gaps;
  std::vector<IoCallEvent> calls;
};

inline IoSyscall ExpectedSyscall(ScriptedKind kind) {
  switch (kind) {
    case ScriptedKind::kSendmsg:
      return IoSyscall::kSendmsg;
    case ScriptedKind::kWritev:
      return IoSyscall::kWritev;
    case ScriptedKind::kSend:
      return IoSyscall::kSendto;  // send() is the sendto syscall
    case ScriptedKind::kWrite:
      return IoSyscall::kWrite;
  }
  return IoSyscall::kSendmsg;
}

// The send calls must be IovecScript() exactly, in order, all on one flow, and the
// receives on that flow must add up to the same byte count.
inline void ExpectScriptRecovered(const CollectingSink& sink) {
  const auto script = IovecScript();
  const auto sends = sink.SendCalls();
  ASSERT_EQ(sends.size(), script.size());
  // The helper talks over 127.0.0.1 from an ephemeral port to an ephemeral port.
  EXPECT_EQ(sends[0].flow.source.ToString().rfind("127.0.0.1:", 0), 0u) << sends[0].flow.ToString();
  EXPECT_EQ(sends[0].flow.destination.ToString().rfind("127.0.0.1:", 0), 0u)
      << sends[0].flow.ToString();
  EXPECT_NE(sends[0].flow.source.port, 0);
  EXPECT_NE(sends[0].flow.destination.port, 0);
  for (size_t i = 0; i < script.size(); ++i) {
    SCOPED_TRACE("scripted call " + std::to_string(i));
    EXPECT_EQ(sends[i].syscall, ExpectedSyscall(script[i].kind));
    EXPECT_EQ(sends[i].iovec_lengths, script[i].lengths);
    int64_t bytes = 0;
    for (uint32_t length : script[i].lengths) bytes += length;
    EXPECT_EQ(sends[i].result, bytes);
    EXPECT_EQ(sends[i].flow, sends[0].flow);
    EXPECT_LE(sends[i].start_ns, sends[i].end_ns);
  }
  uint64_t received = 0;
  for (const auto& call : sink.calls) {
    if (IsSendSyscall(call.syscall) || call.result <= 0) continue;
    EXPECT_EQ(call.flow, sends[0].flow) << "a receive on another flow";
    received += static_cast<uint64_t>(call.result);
  }
  EXPECT_EQ(received, ScriptBytes());
}

// The bytes of the client-to-server flow must be the helper's pattern, all of it.
inline void ExpectScriptBytes(const CollectingSink& sink, const FlowKey& flow) {
  const auto found = sink.streams.find(flow);
  ASSERT_NE(found, sink.streams.end()) << "no bytes for " << flow.ToString();
  const auto& bytes = found->second;
  ASSERT_EQ(bytes.size(), ScriptBytes());
  for (uint64_t i = 0; i < bytes.size(); ++i) {
    ASSERT_EQ(bytes[i], PatternByte(i)) << "byte " << i;
  }
  EXPECT_EQ(sink.gaps.count(flow), 0u);
}

// Starts the helper with `arguments`; with `stdin_fd`, its stdin is a pipe whose
// write end is returned there. `executable`: the path it is started by (a symlink
// to the helper gives the process that link's name as its comm).
inline pid_t SpawnHelper(const std::vector<std::string>& arguments, int* stdin_fd = nullptr,
                         const std::string& executable = ARTUNE_IOVEC_TRAFFIC_HELPER) {
  std::vector<std::string> all = {executable};
  all.insert(all.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& argument : all) argv.push_back(argument.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int pipe_fds[2] = {-1, -1};
  if (stdin_fd != nullptr) {
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], STDIN_FILENO);
  }
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (stdin_fd != nullptr) {
    close(pipe_fds[0]);
    *stdin_fd = pipe_fds[1];
  }
  return error == 0 ? pid : -1;
}

// What running one command under the preload backend gave. A backend that
// could not start leaves its error in both `started` and `ran`.
struct PreloadRun {
  Status started;
  Status ran;
  std::optional<int> exit_code;
  BackendCounters counters;
};

// Runs `options.command` under the preload backend into `sink`, bounded at 50 s
// should the command hang.
inline PreloadRun RunUnderPreloadBackend(const PreloadOptions& options, EventSink& sink) {
  PreloadRun result;
  BackendOptions backend_options;
  backend_options.kind = BackendKind::kPreload;
  backend_options.preload = options;
  auto backend = CreateCaptureBackend(backend_options);
  result.started = backend.ok() ? (*backend)->Start() : backend.status();
  if (!result.started.ok()) {
    result.ran = result.started;
    return result;
  }
  StopCondition stop;
  stop.duration = std::chrono::seconds(50);
  result.ran = (*backend)->Run(sink, stop);
  result.exit_code = (*backend)->command_exit_code();
  result.counters = (*backend)->counters();
  return result;
}

// A symlink to `program` named `prefix` + this process's id, a name no other process
// has: an ebpf trace by that comm then sees this run only, not the helpers of tests
// running at the same time (ctest -j). The link goes with the object.
class CommNamedLink {
 public:
  CommNamedLink(const std::string& prefix, const std::string& program)
      : comm_(prefix + std::to_string(getpid())), path_(directory_.File(comm_)) {
    std::filesystem::create_symlink(program, path_);
  }
  const std::string& comm() const { return comm_; }
  const std::string& path() const { return path_; }

 private:
  const test_support::TempDir directory_{"artune-comm"};
  const std::string comm_;
  const std::string path_;
};

}  // namespace artune::probes::testing
