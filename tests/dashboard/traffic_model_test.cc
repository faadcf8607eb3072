// TrafficModel: per-method totals, rates over whole seconds, classes, scheme,
// iovec sizes of send calls only.
#include "traffic_model.h"

#include <gtest/gtest.h>

namespace artune::dashboard {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr auto kRequest = probes::MessageDirection::kRequest;
constexpr auto kResponse = probes::MessageDirection::kResponse;

SteadyTime T0() { return SteadyTime{} + seconds(1000); }

TEST(TrafficModelTest, EmptyModelHasNoMethods) {
  TrafficModel model;
  TrafficSnapshot snapshot = model.Snapshot(T0());
  EXPECT_TRUE(snapshot.methods.empty());
  EXPECT_EQ(snapshot.state, SourceState::kNone);
  EXPECT_EQ(snapshot.messages, 0u);
}

TEST(TrafficModelTest, CountsPerMethodAndSortsByBytes) {
  TrafficModel model;
  model.MarkStarted(T0());
  model.AddMessage("/a.S/Small", kRequest, 10, T0());
  model.AddMessage("/a.S/Small", kResponse, 20, T0());
  model.AddMessage("/a.S/Big", kRequest, 5, T0());
  model.AddMessage("/a.S/Big", kResponse, 2 << 20, T0());
  TrafficSnapshot snapshot = model.Snapshot(T0() + milliseconds(500));
  ASSERT_EQ(snapshot.methods.size(), 2u);
  EXPECT_EQ(snapshot.methods[0].method, "/a.S/Big");
  EXPECT_EQ(snapshot.methods[0].requests, 1u);
  EXPECT_EQ(snapshot.methods[0].responses, 1u);
  EXPECT_EQ(snapshot.methods[0].bytes, 5u + (2u << 20));
  EXPECT_EQ(snapshot.methods[0].classes.small.count, 1u);
  EXPECT_EQ(snapshot.methods[0].classes.large.count, 1u);
  EXPECT_EQ(snapshot.methods[0].message_sizes.buckets.at(4), 1u);
  EXPECT_EQ(snapshot.methods[0].message_sizes.buckets.at(2 << 20), 1u);
  EXPECT_EQ(snapshot.methods[1].method, "/a.S/Small");
  EXPECT_EQ(snapshot.messages, 4u);
  EXPECT_DOUBLE_EQ(snapshot.elapsed_s, 0.5);
}

TEST(TrafficModelTest, RatesUseCompleteSecondsOfTheWindow) {
  TrafficModel model;
  model.MarkStarted(T0());
  // 10 requests of 100 B in each of seconds 0, 1, 2 and 3; 7 in second 4.
  for (int second = 0; second < 4; ++second) {
    for (int i = 0; i < 10; ++i) {
      model.AddMessage("/m", kRequest, 100, T0() + seconds(second) + milliseconds(i * 50));
    }
  }
  for (int i = 0; i < 7; ++i) model.AddMessage("/m", kRequest, 100, T0() + seconds(4));
  // At 4.5 s the window is seconds 1..3 (complete), the partial second 4 is left out.
  TrafficSnapshot snapshot = model.Snapshot(T0() + milliseconds(4500));
  ASSERT_EQ(snapshot.methods.size(), 1u);
  EXPECT_DOUBLE_EQ(snapshot.methods[0].rpcs_per_s, 10.0);
  EXPECT_DOUBLE_EQ(snapshot.methods[0].bytes_per_s, 1000.0);
  // At 5.5 s: seconds 2, 3, 4 -> (10 + 10 + 7) / 3.
  snapshot = model.Snapshot(T0() + milliseconds(5500));
  EXPECT_DOUBLE_EQ(snapshot.methods[0].rpcs_per_s, 27.0 / 3);
  // Long after the traffic stopped, the rate falls to zero.
  snapshot = model.Snapshot(T0() + seconds(60));
  EXPECT_DOUBLE_EQ(snapshot.methods[0].rpcs_per_s, 0.0);
  EXPECT_EQ(snapshot.methods[0].requests, 47u);
}

TEST(TrafficModelTest, FirstSecondRateIsOverOneSecond) {
  TrafficModel model;
  model.MarkStarted(T0());
  for (int i = 0; i < 5; ++i) model.AddMessage("/m", kRequest, 1, T0() + milliseconds(100));
  // During second 0 nothing is complete yet.
  EXPECT_DOUBLE_EQ(model.Snapshot(T0() + milliseconds(900)).methods[0].rpcs_per_s, 0.0);
  // In second 1 the window is second 0 alone.
  EXPECT_DOUBLE_EQ(model.Snapshot(T0() + milliseconds(1100)).methods[0].rpcs_per_s, 5.0);
}

TEST(TrafficModelTest, ResponsesAreNotCountedAsRpcs) {
  TrafficModel model;
  model.MarkStarted(T0());
  model.AddMessage("/m", kResponse, 50, T0());
  TrafficSnapshot snapshot = model.Snapshot(T0() + milliseconds(1500));
  EXPECT_DOUBLE_EQ(snapshot.methods[0].rpcs_per_s, 0.0);
  EXPECT_DOUBLE_EQ(snapshot.methods[0].bytes_per_s, 50.0);
}

TEST(TrafficModelTest, SchemeFollowsTheDirectionWithMoreBytes) {
  TrafficModel model;
  // Requests: uniform tiny sizes; responses: a long tail (skew) carrying the bytes.
  for (int i = 0; i < 20; ++i) model.AddMessage("/m", kRequest, 30, T0());
  for (int i = 0; i < 18; ++i) model.AddMessage("/m", kResponse, 1000, T0());
  model.AddMessage("/m", kResponse, 4 << 20, T0());
  model.AddMessage("/m", kResponse, 4 << 20, T0());
  EXPECT_EQ(model.Snapshot(T0()).methods[0].scheme, probes::PayloadScheme::kSkew);

  TrafficModel uniform;
  for (int i = 0; i < 20; ++i) uniform.AddMessage("/u", kResponse, 4096, T0());
  EXPECT_EQ(uniform.Snapshot(T0()).methods[0].scheme, probes::PayloadScheme::kUniform);
}

TEST(TrafficModelTest, IovecSizesComeFromSuccessfulSendCallsOnly) {
  TrafficModel model;
  probes::IoCallEvent send;
  send.syscall = probes::IoSyscall::kSendmsg;
  send.iovec_lengths = {9, 5, 1 << 20};
  send.result = 14 + (1 << 20);
  model.AddIoCall(send);
  probes::IoCallEvent receive = send;
  receive.syscall = probes::IoSyscall::kRecvmsg;
  model.AddIoCall(receive);
  probes::IoCallEvent failed = send;
  failed.result = -11;
  model.AddIoCall(failed);
  TrafficSnapshot snapshot = model.Snapshot(T0());
  EXPECT_EQ(snapshot.send_calls, 1u);
  EXPECT_EQ(snapshot.send_iovec_sizes.Total(), 3u);
  EXPECT_EQ(snapshot.send_iovec_sizes.buckets.at(8), 1u);
  EXPECT_EQ(snapshot.send_iovec_sizes.buckets.at(4), 1u);
  EXPECT_EQ(snapshot.send_iovec_sizes.buckets.at(1 << 20), 1u);
}

TEST(TrafficModelTest, StateAndCountersAreReported) {
  TrafficModel model;
  model.SetSource("exec sleep 1");
  model.SetState(SourceState::kFailed, "no such command");
  probes::BackendCounters counters;
  counters.events_lost = 3;
  model.SetCounters(counters, 2);
  TrafficSnapshot snapshot = model.Snapshot(T0());
  EXPECT_EQ(snapshot.source, "exec sleep 1");
  EXPECT_EQ(snapshot.state, SourceState::kFailed);
  EXPECT_EQ(snapshot.message, "no such command");
  EXPECT_EQ(snapshot.counters.events_lost, 3u);
  EXPECT_EQ(snapshot.decode_errors, 2u);
}

}  // namespace
}  // namespace artune::dashboard
