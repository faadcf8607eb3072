// The runners over a scripted channel: counting, validation failures, errors.
#include "artune/tuner/benchmark.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace artune::tuner {
namespace {

class ScriptedPrepared final : public PreparedPayload {
 public:
  explicit ScriptedPrepared(const Payload& payload) : payload_(payload) {}
  const Payload& payload() const override { return payload_; }

 private:
  const Payload& payload_;
};

// Completes every call at once (async ones on a thread of their own); call number
// `fail_at` (1-based, counting all calls) returns `failure`.
class ScriptedChannel final : public BenchChannel {
 public:
  ScriptedChannel(uint64_t fail_at, Status failure) : fail_at_(fail_at), failure_(failure) {}
  ~ScriptedChannel() override {
    for (auto& t : threads_) t.join();
  }
  Result<std::unique_ptr<PreparedPayload>> Prepare(const Payload& payload) override {
    return std::unique_ptr<PreparedPayload>(new ScriptedPrepared(payload));
  }
  Status Call(BenchMethod, const PreparedPayload&) override { return Next(); }
  void CallAsync(BenchMethod, const PreparedPayload&, CallDone done) override {
    Status status = Next();
    std::lock_guard lock(mutex_);
    threads_.emplace_back([status, done] { done(status); });
  }
  uint64_t calls() const { return calls_.load(); }

 private:
  Status Next() {
    uint64_t n = calls_.fetch_add(1) + 1;
    return n == fail_at_ ? failure_ : Status::Ok();
  }
  uint64_t fail_at_;
  Status failure_;
  std::atomic<uint64_t> calls_{0};
  std::mutex mutex_;
  std::vector<std::thread> threads_;
};

RunOptions Tiny(BenchmarkKind kind) {
  RunOptions options;
  options.kind = kind;
  options.warmup_s = 0.01;
  options.duration_s = 0.05;
  options.inflight = 2;
  return options;
}

Payload SmallPayload() { return *GeneratePayload(PayloadSpec{}); }

TEST(BenchmarkTest, LatencyCountsValidatedCalls) {
  ScriptedChannel channel(0, Status::Ok());
  Payload payload = SmallPayload();
  auto result = RunLatency(channel, payload, Tiny(BenchmarkKind::kLatency));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->validated);
  EXPECT_GT(result->rpcs, 0u);
  EXPECT_EQ(result->latency_us.count, result->rpcs);
  EXPECT_EQ(result->payload_bytes, 100u);
}

TEST(BenchmarkTest, LatencyMismatchStopsTheRunAsNotValidated) {
  // The first call fails: a slow machine must not end the run before it.
  ScriptedChannel channel(1, Status::Corruption("buffer 2 checksum differs"));
  Payload payload = SmallPayload();
  auto result = RunLatency(channel, payload, Tiny(BenchmarkKind::kLatency));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->validated);
  EXPECT_EQ(result->validation_error, "buffer 2 checksum differs");
  EXPECT_EQ(channel.calls(), 1u);
}

TEST(BenchmarkTest, TransportErrorEndsTheRunWithIt) {
  ScriptedChannel channel(1, Status::Unavailable("peer went away"));
  Payload payload = SmallPayload();
  auto result = RunLatency(channel, payload, Tiny(BenchmarkKind::kLatency));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable);
}

TEST(BenchmarkTest, BandwidthMismatchIsReported) {
  ScriptedChannel channel(1, Status::Corruption("ack checksum differs"));
  Payload payload = SmallPayload();
  auto result = RunBandwidth(channel, payload, Tiny(BenchmarkKind::kBandwidth));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->validated);
  EXPECT_EQ(result->validation_error, "ack checksum differs");
}

// Issue 16: `bench --benchmark bandwidth` with calls that fail at once (on the
// calling thread, as the embedded transport fails a call on a closed connection)
// reissued them forever. Now the first failure ends the run: a handful of calls,
// not millions.
class FailingAtOnceChannel final : public BenchChannel {
 public:
  Result<std::unique_ptr<PreparedPayload>> Prepare(const Payload& payload) override {
    return std::unique_ptr<PreparedPayload>(new ScriptedPrepared(payload));
  }
  Status Call(BenchMethod, const PreparedPayload&) override {
    calls_.fetch_add(1);
    return Status::Unavailable("connection closed");
  }
  void CallAsync(BenchMethod method, const PreparedPayload& payload, CallDone done) override {
    done(Call(method, payload));
  }
  uint64_t calls() const { return calls_.load(); }

 private:
  std::atomic<uint64_t> calls_{0};
};

TEST(BenchmarkTest, CallsThatFailAtOnceEndAWindowedRun) {
  for (BenchmarkKind kind : {BenchmarkKind::kBandwidth, BenchmarkKind::kPs}) {
    FailingAtOnceChannel channel;
    Payload payload = SmallPayload();
    RunOptions options = Tiny(kind);
    auto result =
        kind == BenchmarkKind::kBandwidth
            ? RunBandwidth(channel, payload, options)
            : RunPs(std::vector<std::vector<BenchChannel*>>(
                        options.clients, std::vector<BenchChannel*>(options.servers, &channel)),
                    payload, options);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable);
    EXPECT_LE(channel.calls(), 64u) << "calls kept being reissued after they failed";
  }
}

TEST(BenchmarkTest, PsCallsEveryServerFromEveryClient) {
  std::vector<std::unique_ptr<ScriptedChannel>> owned;
  std::vector<std::vector<BenchChannel*>> channels(3);
  for (auto& client : channels) {
    for (int s = 0; s < 2; ++s) {
      owned.push_back(std::make_unique<ScriptedChannel>(0, Status::Ok()));
      client.push_back(owned.back().get());
    }
  }
  Payload payload = SmallPayload();
  auto result = RunPs(channels, payload, Tiny(BenchmarkKind::kPs));
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->validated);
  EXPECT_GT(result->rpcs, 0u);
  EXPECT_GT(result->rpcs_per_s, 0);
  for (auto& channel : owned) EXPECT_GT(channel->calls(), 0u);
}

TEST(BenchmarkTest, RejectsBadOptions) {
  RunOptions options;
  options.duration_s = 0;
  EXPECT_EQ(ValidateRunOptions(options).code(), ErrorCode::kInvalidArgument);
  options = RunOptions{};
  options.inflight = 0;
  EXPECT_FALSE(ValidateRunOptions(options).ok());
  options = RunOptions{};
  options.servers = 0;
  EXPECT_FALSE(ValidateRunOptions(options).ok());
  EXPECT_FALSE(ParseBenchmark("throughput").ok());
  EXPECT_EQ(*ParseBenchmark("ps"), BenchmarkKind::kPs);
}

}  // namespace
}  // namespace artune::tuner
