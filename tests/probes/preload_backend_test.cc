// The preload backend (`artune probe --exec`) against iovec_traffic: exact iovec
// lists and bytes, errno and exit status passed through, many threads, fork, and
// a ring too small for the traffic (overruns counted, nothing breaks).
#include <gmock/gmock.h>

#include <set>
#include <thread>

#include "artune/probes/backend.h"
#include "traced_run.h"

namespace artune::probes {
namespace {

using testing::CollectingSink;

testing::PreloadRun RunUnderPreload(const std::vector<std::string>& arguments, EventSink& sink,
                                    PreloadOptions options = {}) {
  options.command = {ARTUNE_IOVEC_TRAFFIC_HELPER};
  options.command.insert(options.command.end(), arguments.begin(), arguments.end());
  return testing::RunUnderPreloadBackend(options, sink);
}

TEST(PreloadBackendTest, RecoversEveryIovecLengthAndByte) {
  CollectingSink sink;
  const auto result = RunUnderPreload({"script"}, sink);
  ASSERT_TRUE(result.started.ok()) << result.started.ToString();
  ASSERT_TRUE(result.ran.ok()) << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.counters.events_lost, 0u);
  testing::ExpectScriptRecovered(sink);
  const auto sends = sink.SendCalls();
  ASSERT_FALSE(sends.empty());
  testing::ExpectScriptBytes(sink, sends[0].flow);
  // The library saw connect() and accept(), and close() ended both directions.
  ASSERT_TRUE(sink.opened.count(sends[0].flow));
  EXPECT_EQ(sink.opened.at(sends[0].flow), FlowOrigin::kHandshake);
  ASSERT_TRUE(sink.closed.count(sends[0].flow));
  EXPECT_EQ(sink.closed.at(sends[0].flow), FlowEnd::kFin);
}

TEST(PreloadBackendTest, WithoutByteCaptureOnlyCallsAreReported) {
  CollectingSink sink;
  PreloadOptions options;
  options.capture_bytes = false;
  const auto result = RunUnderPreload({"script"}, sink, options);
  ASSERT_TRUE(result.ran.ok()) << result.started.ToString() << result.ran.ToString();
  testing::ExpectScriptRecovered(sink);
  EXPECT_TRUE(sink.streams.empty());
}

TEST(PreloadBackendTest, ReturnsTheCommandsExitStatus) {
  CollectingSink sink;
  const auto result = RunUnderPreload({"exit", "7"}, sink);
  ASSERT_TRUE(result.ran.ok()) << result.started.ToString() << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(result.counters.detail.at("command_exit_code"), 7u);
}

TEST(PreloadBackendTest, ErrnoAndResultsPassThroughUnchanged) {
  CollectingSink sink;
  const auto result = RunUnderPreload({"errno"}, sink);
  ASSERT_TRUE(result.ran.ok()) << result.started.ToString() << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 0) << "the helper printed which errno check failed";
  // The failed socket calls are still reported, with -errno as the result.
  bool saw_eagain = false;
  for (const auto& call : sink.calls) saw_eagain = saw_eagain || call.result == -EAGAIN;
  EXPECT_TRUE(saw_eagain);
}

TEST(PreloadBackendTest, MultithreadedWritersAreAllRecorded) {
  constexpr int kThreads = 8;
  constexpr int kCalls = 300;
  CollectingSink sink;
  const auto result =
      RunUnderPreload({"threads", std::to_string(kThreads), std::to_string(kCalls)}, sink);
  ASSERT_TRUE(result.ran.ok()) << result.started.ToString() << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.counters.events_lost, 0u);
  std::map<uint32_t, int> calls_by_last_length;
  std::set<uint32_t> tids;
  for (const auto& call : sink.SendCalls()) {
    ASSERT_EQ(call.iovec_lengths.size(), 3u);
    EXPECT_EQ(call.iovec_lengths[0], 64u);
    EXPECT_EQ(call.iovec_lengths[1], 1000u);
    ++calls_by_last_length[call.iovec_lengths[2]];
    tids.insert(call.tid);
  }
  EXPECT_EQ(tids.size(), static_cast<size_t>(kThreads));
  ASSERT_EQ(calls_by_last_length.size(), static_cast<size_t>(kThreads));
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(calls_by_last_length[9 + t], kCalls) << "thread " << t;
}

TEST(PreloadBackendTest, ForkedChildrenKeepRecording) {
  CollectingSink sink;
  const auto result = RunUnderPreload({"fork"}, sink);
  ASSERT_TRUE(result.ran.ok()) << result.started.ToString() << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 0);
  const auto sends = sink.SendCalls();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].iovec_lengths, std::vector<uint32_t>({33}));
  EXPECT_EQ(sends[1].iovec_lengths, std::vector<uint32_t>({11, 22}));
  EXPECT_NE(sends[0].pid, sends[1].pid);
  EXPECT_NE(sends[0].tid, sends[1].tid);
}

// A sink that is slow on the first call, so a tiny ring must overflow.
class StallingSink : public CollectingSink {
 public:
  void OnIoCall(const IoCallEvent& event) override {
    if (calls.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CollectingSink::OnIoCall(event);
  }
};

TEST(PreloadBackendTest, RingOverrunIsCountedNotFatal) {
  StallingSink sink;
  PreloadOptions options;
  options.ring_bytes = 64 << 10;
  constexpr int kCalls = 20000;
  const auto result = RunUnderPreload({"flood", std::to_string(kCalls)}, sink, options);
  ASSERT_TRUE(result.ran.ok()) << result.started.ToString() << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_GT(result.counters.events_lost, 0u);
  EXPECT_GT(result.counters.detail.at("ring_records_dropped"), 0u);
  EXPECT_LT(sink.SendCalls().size(), static_cast<size_t>(kCalls));
  for (const auto& call : sink.SendCalls()) EXPECT_EQ(call.iovec_lengths.size(), 260u);
}

// Issue 16, medium 6: a traced program that overwrote the ring's header made the
// probe write zeros where the program chose (SIGBUS; UBSan: pointer overflow).
// Now the probe reads nothing from the ring it has not checked: the capture ends
// with a corruption error and keeps what it read before.
TEST(PreloadBackendTest, AScribbledRingEndsTheCaptureCleanly) {
  CollectingSink sink;
  const auto result = RunUnderPreload({"scribble"}, sink);
  ASSERT_TRUE(result.started.ok()) << result.started.ToString();
  EXPECT_EQ(result.ran.code(), ErrorCode::kCorruption) << result.ran.ToString();
  EXPECT_THAT(result.ran.message(), ::testing::HasSubstr("overwritten by the traced command"));
  EXPECT_EQ(result.exit_code, 0);
}

// Issue 26, item 6: a traced command that truncated the ring's memfd killed the
// probe with SIGBUS (exit 135) at its next read of the ring. The memfd is now
// sealed at its size: the truncation is refused and the capture goes on whole.
TEST(PreloadBackendTest, ATruncatedRingIsRefusedAndTheCaptureGoesOn) {
  CollectingSink sink;
  const auto result = RunUnderPreload({"truncate"}, sink);
  ASSERT_TRUE(result.started.ok()) << result.started.ToString();
  EXPECT_TRUE(result.ran.ok()) << result.ran.ToString();
  EXPECT_EQ(result.exit_code, 0) << "exit 7: the traced command could truncate the ring";
  EXPECT_FALSE(sink.SendCalls().empty());
}

TEST(PreloadBackendTest, MissingCommandIsNotFound) {
  CollectingSink sink;
  PreloadOptions options;
  options.command = {"/nonexistent/artune-no-such-command"};
  BackendOptions backend_options;
  backend_options.kind = BackendKind::kPreload;
  backend_options.preload = options;
  auto backend = CreateCaptureBackend(backend_options);
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ((*backend)->Start().code(), ErrorCode::kNotFound);
}

TEST(PreloadBackendTest, MissingLibraryIsNotFound) {
  BackendOptions backend_options;
  backend_options.kind = BackendKind::kPreload;
  backend_options.preload.command = {"true"};
  backend_options.preload.library_path = "/nonexistent/libartune_preload.so";
  auto backend = CreateCaptureBackend(backend_options);
  ASSERT_TRUE(backend.ok());
  const Status started = (*backend)->Start();
  EXPECT_EQ(started.code(), ErrorCode::kNotFound);
  EXPECT_NE(started.message().find("ARTUNE_PRELOAD_LIBRARY"), std::string::npos);
}

TEST(PreloadBackendTest, EmptyCommandIsRejected) {
  BackendOptions backend_options;
  backend_options.kind = BackendKind::kPreload;
  EXPECT_EQ(CreateCaptureBackend(backend_options).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace artune::probes
