// The ebpf and preload backends against a real gRPC C++ server and client (the
// grpc_tensors helper, the known RecvTensor traffic of grpc_tensor_traffic.h):
// each must recover the known distribution exactly — message counts, sizes,
// tensors, per-method attribution — and record every iovec of every sendmsg
// (gRPC writes up to 260 per call). The ebpf test runs the helper under the
// preload backend at the same time, so both see the very same calls: their iovec
// lists must be identical, call by call. The ebpf test needs root; the preload test
// needs nothing.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "grpc_tensor_traffic.h"
#include "traced_run.h"

namespace artune::probes {
namespace {

SessionOptions AttributingIovecs() {
  SessionOptions options;
  options.attribute_iovecs = true;
  return options;
}

// Feeds a ProbeSession and keeps the send calls, per thread in order.
class SessionAndCalls : public EventSink {
 public:
  SessionAndCalls() : session(AttributingIovecs()) {}
  void OnFlowOpen(const FlowKey& flow, FlowOrigin origin, uint64_t ns) override {
    session.OnFlowOpen(flow, origin, ns);
  }
  void OnStreamBytes(const StreamSegment& segment) override { session.OnStreamBytes(segment); }
  void OnStreamGap(const FlowKey& flow, uint64_t missing, uint64_t ns) override {
    session.OnStreamGap(flow, missing, ns);
  }
  void OnFlowClose(const FlowKey& flow, FlowEnd end, uint64_t ns) override {
    session.OnFlowClose(flow, end, ns);
  }
  void OnIoCall(const IoCallEvent& event) override {
    session.OnIoCall(event);
    if (!IsSendSyscall(event.syscall)) return;
    sends_by_thread[event.tid].push_back(event.iovec_lengths);
    // The iovecs the call sent (all up to the one holding its last byte).
    int64_t left = event.result;
    for (uint32_t length : event.iovec_lengths) {
      if (left <= 0) break;
      ++sent_iovecs;
      left -= length;
    }
  }

  ProbeSession session;
  std::map<uint32_t, std::vector<std::vector<uint32_t>>> sends_by_thread;
  uint64_t sent_iovecs = 0;
};

// Every sent iovec is in exactly one histogram: a method's, or the unattributed
// one (connection frames: preface, SETTINGS, WINDOW_UPDATE, PING). Each method and
// direction has its own (HEADERS at least); RecvTensor responses carry the tensor
// payload in large slices, which nothing else has.
void ExpectIovecsAttributedPerMethod(const Profile& profile, const SessionAndCalls& sink) {
  const std::string dump = ProfileToJson(profile);
  uint64_t attributed = 0;
  for (const MethodProfile& m : profile.methods) {
    EXPECT_GT(m.iovec_sizes.Total(), 0u) << m.method << " " << dump;
    attributed += m.iovec_sizes.Total();
  }
  EXPECT_EQ(attributed + profile.unattributed_iovec_sizes.Total(), sink.sent_iovecs) << dump;
  EXPECT_GT(profile.unattributed_iovec_sizes.Total(), 0u) << "the preface at least";
  auto largest_bucket = [](const Log2Histogram& histogram) {
    return histogram.buckets.empty() ? 0 : histogram.buckets.rbegin()->first;
  };
  const MethodProfile* responses =
      testing::FindMethod(profile, testing::kRecvTensorMethod, MessageDirection::kResponse);
  ASSERT_NE(responses, nullptr);
  EXPECT_GE(largest_bucket(responses->iovec_sizes), 8192u) << dump;
  for (const MethodProfile& m : profile.methods) {
    if (&m == responses) continue;
    EXPECT_LT(largest_bucket(m.iovec_sizes), 1024u) << m.method << dump;
  }
  // Stored with the profile: the JSON round trip keeps every histogram.
  auto reread = ProfileFromJson(dump);
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_EQ(reread->unattributed_iovec_sizes.buckets, profile.unattributed_iovec_sizes.buckets);
  for (size_t i = 0; i < profile.methods.size(); ++i) {
    EXPECT_EQ(reread->methods[i].iovec_sizes.buckets, profile.methods[i].iovec_sizes.buckets);
  }
  EXPECT_NE(FormatProfileTable(profile).find("iovec sizes " +
                                             std::string(testing::kRecvTensorMethod) + " response"),
            std::string::npos);
}

// Every send's iovec list is whole: gRPC's sendmsg gathers frame headers and
// message slices, up to 260 of them.
void ExpectWholeIovecLists(const SessionAndCalls& sink) {
  size_t longest = 0, calls = 0;
  for (const auto& [tid, sends] : sink.sends_by_thread) {
    for (const auto& lengths : sends) {
      longest = std::max(longest, lengths.size());
      ++calls;
    }
  }
  EXPECT_GT(calls, 0u);
  // How many gRPC gathers depends on its flow-control window and frame size;
  // 260 is its cap (iovec_traffic checks 260 and 1024 exactly).
  EXPECT_GT(longest, 8u) << "frames and message slices go out gathered in one sendmsg";
  EXPECT_LE(longest, 260u) << "gRPC writes at most 260 iovecs per sendmsg";
}

// `executable`: the path the helper is started by; a symlink to it gives the
// process that link's name as its comm.
testing::PreloadRun RunHelperUnderPreload(
    EventSink& sink, const std::string& executable = ARTUNE_GRPC_TENSORS_HELPER) {
  PreloadOptions options;
  options.command = {executable};
  return testing::RunUnderPreloadBackend(options, sink);
}

TEST(GrpcSyscallCapture, PreloadRecoversTheDistributionAndEveryIovec) {
  SessionAndCalls sink;
  const testing::PreloadRun run = RunHelperUnderPreload(sink);
  ASSERT_TRUE(run.ran.ok()) << run.ran.ToString();
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.counters.events_lost, 0u);
  const Profile profile = sink.session.Finish("preload", run.counters, 0);
  testing::ExpectKnownDistribution(profile);
  ExpectWholeIovecLists(sink);
  ExpectIovecsAttributedPerMethod(profile, sink);
}

TEST(GrpcSyscallCapture, EbpfRecoversTheDistributionAndTheSameIovecsAsPreload) {
  struct stat info {};
  if (geteuid() != 0) GTEST_SKIP() << "the ebpf backend needs root (CAP_BPF + CAP_PERFMON)";
  if (stat("/sys/kernel/btf/vmlinux", &info) != 0)
    GTEST_SKIP() << "no kernel BTF at /sys/kernel/btf/vmlinux";

  // Attached by name before the helper exists, so it sees the connection begin. The
  // helper runs through a symlink of a name no other process has: with ctest -j,
  // the preload test's own grpc_tensors may be running at the same time.
  const testing::CommNamedLink helper("gt", ARTUNE_GRPC_TENSORS_HELPER);
  BackendOptions options;
  options.kind = BackendKind::kEbpf;
  options.ebpf.comm = helper.comm();
  options.ebpf.decode = true;
  auto ebpf = CreateCaptureBackend(options);
  ASSERT_TRUE(ebpf.ok()) << ebpf.status().ToString();
  const Status started = (*ebpf)->Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  SessionAndCalls ebpf_sink;
  std::atomic<bool> helper_done{false};
  Status ebpf_ran;
  std::thread tracer([&] {
    StopCondition stop;
    stop.stop_requested = &helper_done;
    stop.duration = std::chrono::seconds(55);
    ebpf_ran = (*ebpf)->Run(ebpf_sink, stop);
  });

  SessionAndCalls preload_sink;
  const testing::PreloadRun run = RunHelperUnderPreload(preload_sink, helper.path());
  helper_done = true;
  tracer.join();
  ASSERT_TRUE(run.ran.ok()) << run.ran.ToString();
  EXPECT_EQ(run.exit_code, 0);
  ASSERT_TRUE(ebpf_ran.ok()) << ebpf_ran.ToString();

  const BackendCounters counters = (*ebpf)->counters();
  EXPECT_EQ(counters.events_lost, 0u);
  const Profile profile = ebpf_sink.session.Finish("ebpf", counters, 0);
  testing::ExpectKnownDistribution(profile);
  ExpectWholeIovecLists(ebpf_sink);
  ExpectIovecsAttributedPerMethod(profile, ebpf_sink);
  // Two independent observers of the same sendmsg calls agree on every iovec.
  EXPECT_EQ(ebpf_sink.sends_by_thread, preload_sink.sends_by_thread);
}

}  // namespace
}  // namespace artune::probes
