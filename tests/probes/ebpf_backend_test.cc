// The ebpf backend against a real process with known socket I/O (iovec_traffic):
// every iovec length, count and byte must come back exactly. Needs root (or
// CAP_BPF + CAP_PERFMON) and kernel BTF; skips with the reason otherwise.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "artune/probes/backend.h"
#include "traced_run.h"

namespace artune::probes {
namespace {

using testing::CollectingSink;

// Why this machine cannot run the ebpf backend, or "" when it can. (A helper that
// called GTEST_SKIP itself would only return from the helper: the test would run on.)
std::string EbpfSkipReason() {
  struct stat info {};
  if (geteuid() != 0) return "the ebpf backend needs root (CAP_BPF + CAP_PERFMON)";
  if (stat("/sys/kernel/btf/vmlinux", &info) != 0)
    return "no kernel BTF at /sys/kernel/btf/vmlinux";
  return "";
}

#define SKIP_UNLESS_EBPF_POSSIBLE()                             \
  if (const std::string why = EbpfSkipReason(); !why.empty()) { \
    GTEST_SKIP() << why;                                        \
  }

struct TracedHelper {
  int exit_code = -1;
  BackendCounters counters;
};

// Starts the helper (waiting on stdin), traces it from Start() until it exits.
TracedHelper TraceHelper(EbpfOptions options, const std::vector<std::string>& arguments,
                         CollectingSink& sink,
                         const std::string& executable = ARTUNE_IOVEC_TRAFFIC_HELPER) {
  TracedHelper result;
  int go_fd = -1;
  const pid_t pid = testing::SpawnHelper(arguments, &go_fd, executable);
  EXPECT_GT(pid, 0);
  if (pid <= 0) return result;
  if (options.comm.empty()) options.pid = static_cast<uint32_t>(pid);
  BackendOptions backend_options;
  backend_options.kind = BackendKind::kEbpf;
  backend_options.ebpf = options;
  auto backend = CreateCaptureBackend(backend_options);
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  Status started = backend.ok() ? (*backend)->Start() : backend.status();
  EXPECT_TRUE(started.ok()) << started.ToString();
  EXPECT_EQ(write(go_fd, "g", 1), 1);  // attached: let it run
  close(go_fd);

  std::atomic<bool> exited{false};
  std::thread reaper([&] {
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    exited = true;
  });
  if (started.ok()) {
    StopCondition stop;
    stop.stop_requested = &exited;
    stop.duration = std::chrono::seconds(50);  // bound, should the helper hang
    const Status ran = (*backend)->Run(sink, stop);
    EXPECT_TRUE(ran.ok()) << ran.ToString();
    result.counters = (*backend)->counters();
  } else {
    kill(pid, SIGKILL);
  }
  reaper.join();
  return result;
}

TEST(EbpfBackendTest, RecoversEveryIovecLengthOfEveryCall) {
  SKIP_UNLESS_EBPF_POSSIBLE();
  CollectingSink sink;
  const auto traced = TraceHelper({}, {"script", "--wait"}, sink);
  EXPECT_EQ(traced.exit_code, 0);
  EXPECT_EQ(traced.counters.events_lost, 0u);
  testing::ExpectScriptRecovered(sink);
  EXPECT_TRUE(sink.streams.empty()) << "bytes are copied only with decode";
  // Connected before the trace began (joined midway), closed by the helper.
  for (const auto& [flow, origin] : sink.opened) EXPECT_EQ(origin, FlowOrigin::kMidStream);
  EXPECT_EQ(sink.closed.size(), sink.opened.size());
  for (const auto& [flow, end] : sink.closed) EXPECT_EQ(end, FlowEnd::kFin);
}

TEST(EbpfBackendTest, DecodeCopiesTheTransferredBytesExactly) {
  SKIP_UNLESS_EBPF_POSSIBLE();
  CollectingSink sink;
  EbpfOptions options;
  options.decode = true;
  const auto traced = TraceHelper(options, {"script", "--wait"}, sink);
  EXPECT_EQ(traced.exit_code, 0);
  EXPECT_EQ(traced.counters.events_lost, 0u);
  testing::ExpectScriptRecovered(sink);
  const auto sends = sink.SendCalls();
  ASSERT_FALSE(sends.empty());
  testing::ExpectScriptBytes(sink, sends[0].flow);
  EXPECT_EQ(traced.counters.detail.at("duplicate_stream_bytes_skipped"), testing::ScriptBytes())
      << "the receiving side's copy of the same bytes is skipped";
}

TEST(EbpfBackendTest, DecodeLimitBecomesAGap) {
  SKIP_UNLESS_EBPF_POSSIBLE();
  CollectingSink sink;
  EbpfOptions options;
  options.decode = true;
  options.decode_max_bytes_per_call = 4096;
  const auto traced = TraceHelper(options, {"script", "--wait"}, sink);
  EXPECT_EQ(traced.exit_code, 0);
  const auto sends = sink.SendCalls();
  ASSERT_FALSE(sends.empty());
  const FlowKey flow = sends[0].flow;
  // Both ends are traced, and the side whose bytes reach the backend first owns
  // the flow's stream (syscall_flows.h); which one that is depends on the order
  // the per-CPU buffers deliver. So either side's calls are the ones cut at the
  // limit: the gap is what the sends past 4096 bytes left out, or the receives.
  uint64_t send_gap = 0;
  uint64_t receive_gap = 0;
  for (const auto& call : sink.calls) {
    if (call.flow != flow || call.result <= 4096) continue;
    (IsSendSyscall(call.syscall) ? send_gap : receive_gap) +=
        static_cast<uint64_t>(call.result) - 4096;
  }
  EXPECT_GT(send_gap, 0u);
  EXPECT_THAT(sink.gaps[flow], ::testing::AnyOf(send_gap, receive_gap));
  EXPECT_EQ(sink.streams[flow].size() + sink.gaps[flow], testing::ScriptBytes());
}

TEST(EbpfBackendTest, TracesByProcessName) {
  SKIP_UNLESS_EBPF_POSSIBLE();
  // Started through a symlink of a name no other process has, so that helpers of
  // tests running at the same time (ctest -j) are not traced too.
  const testing::CommNamedLink helper("iot", ARTUNE_IOVEC_TRAFFIC_HELPER);
  CollectingSink sink;
  EbpfOptions options;
  options.comm = helper.comm();
  const auto traced = TraceHelper(options, {"script", "--wait"}, sink, helper.path());
  EXPECT_EQ(traced.exit_code, 0);
  testing::ExpectScriptRecovered(sink);
}

// connect/accept/close are traced: each connection's flows open from their first
// byte and end with the close, and the second connection, on the fds the first
// freed, is a flow of its own with its own bytes.
TEST(EbpfBackendTest, ConnectionsAreOpenedAndClosedAndFdReuseIsNotMixedUp) {
  SKIP_UNLESS_EBPF_POSSIBLE();
  CollectingSink sink;
  EbpfOptions options;
  options.decode = true;
  const auto traced = TraceHelper(options, {"reconnect", "--wait"}, sink);
  EXPECT_EQ(traced.exit_code, 0);
  EXPECT_EQ(traced.counters.events_lost, 0u);
  EXPECT_EQ(traced.counters.detail.at("connects"), 2u);
  EXPECT_EQ(traced.counters.detail.at("accepts"), 2u);
  const auto sends = sink.SendCalls();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].iovec_lengths, std::vector<uint32_t>({100, 200}));
  EXPECT_EQ(sends[1].iovec_lengths, std::vector<uint32_t>({7, 8}));
  EXPECT_EQ(sends[0].fd, sends[1].fd) << "the second connection reuses the first one's fd";
  ASSERT_NE(sends[0].flow, sends[1].flow);
  for (const auto& send : sends) {
    for (const FlowKey& flow : {send.flow, send.flow.Reversed()}) {
      ASSERT_TRUE(sink.opened.count(flow)) << flow.ToString();
      EXPECT_EQ(sink.opened.at(flow), FlowOrigin::kHandshake) << flow.ToString();
      ASSERT_TRUE(sink.closed.count(flow)) << flow.ToString();
      EXPECT_EQ(sink.closed.at(flow), FlowEnd::kFin) << flow.ToString();
    }
    const auto& bytes = sink.streams[send.flow];
    ASSERT_EQ(bytes.size(), static_cast<size_t>(send.result));
    for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], testing::PatternByte(i));
  }
}

TEST(EbpfBackendTest, MissingProcessIsNotFound) {
  SKIP_UNLESS_EBPF_POSSIBLE();
  const pid_t pid = testing::SpawnHelper({"exit", "0"});
  ASSERT_GT(pid, 0);
  waitpid(pid, nullptr, 0);  // reaped: the pid no longer exists
  BackendOptions options;
  options.kind = BackendKind::kEbpf;
  options.ebpf.pid = static_cast<uint32_t>(pid);
  auto backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok());
  const Status started = (*backend)->Start();
  EXPECT_EQ(started.code(), ErrorCode::kNotFound) << started.ToString();
}

TEST(EbpfBackendTest, OptionsAreChecked) {
  BackendOptions options;
  options.kind = BackendKind::kEbpf;
  EXPECT_EQ(CreateCaptureBackend(options).status().code(), ErrorCode::kInvalidArgument);
  options.ebpf.pid = 1;
  options.ebpf.comm = "both";
  EXPECT_EQ(CreateCaptureBackend(options).status().code(), ErrorCode::kInvalidArgument);
  options.ebpf.pid.reset();
  options.ebpf.comm = "a_name_longer_than_15";
  EXPECT_EQ(CreateCaptureBackend(options).status().code(), ErrorCode::kInvalidArgument);
  options.ebpf.comm = "ok";
  options.ebpf.ring_buffer_bytes = 3 << 20;
  EXPECT_EQ(CreateCaptureBackend(options).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace artune::probes
