// The embedded transport on loopback, raw (no tuner, no payload generator): round
// trips of 10 B, 10 KB and 1 MB, one-way bandwidth with calls in flight, and small
// call throughput with many calls in flight. Event and busy polling.
//
//   transport_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "artune/transport/transport.h"

namespace artune::transport {
namespace {

struct Pair {
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> client;
};

// One server/client pair per polling mode, kept for the whole run.
Pair& GetPair(PollingMode polling) {
  static std::map<PollingMode, Pair> pairs;
  Pair& pair = pairs[polling];
  if (!pair.server) {
    Config config;
    config.fabric = FabricKind::kTcp;
    config.polling = polling;
    config.max_outstanding = 256;
    auto server = Server::Start(config, "127.0.0.1:0");
    if (!server.ok()) std::abort();
    pair.server = std::move(server).value();
    pair.server->RegisterHandler(
        "echo",
        [](const Message& request, ResponseWriter& response) {
          for (const ConstSlice& slice : request.slices()) response.Append(slice);
          return Status::Ok();
        },
        HandlerOptions{.non_blocking = true});
    pair.server->RegisterHandler(
        "ack", [](const Message&, ResponseWriter&) { return Status::Ok(); },
        HandlerOptions{.non_blocking = true});
    auto client = Client::Connect(config, pair.server->address());
    if (!client.ok()) std::abort();
    pair.client = std::move(client).value();
  }
  return pair;
}

PollingMode ModeOf(const benchmark::State& state) {
  return state.range(1) == 0 ? PollingMode::kEvent : PollingMode::kBusy;
}

void BM_RoundTrip(benchmark::State& state) {
  Pair& pair = GetPair(ModeOf(state));
  const size_t size = static_cast<size_t>(state.range(0));
  Result<Buffer> buffer = pair.client->allocator().Allocate(size);
  if (!buffer.ok()) return state.SkipWithError(buffer.status().ToString().c_str());
  std::memset(buffer->data(), 0x5a, size);
  const std::vector<ConstSlice> request = {ConstSlice(buffer->data(), size)};
  for (auto _ : state) {
    Result<Message> response = pair.client->Call("echo", request);
    if (!response.ok() || response->total_bytes() != size) {
      return state.SkipWithError("echo failed");
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size * 2));
  state.SetLabel(state.range(1) == 0 ? "event" : "busy");
}

// Keeps `in_flight` async calls of `slices` going until `total` completed.
void RunInFlight(Client& client, const char* method, const std::vector<ConstSlice>& slices,
                 int in_flight, int64_t total, benchmark::State& state) {
  std::mutex mutex;
  std::condition_variable done_cv;
  int64_t started = 0;
  int64_t finished = 0;
  bool failed = false;
  std::function<void()> start_one;
  start_one = [&] {
    client.CallAsync(method, slices, {}, [&](Result<Message> result) {
      bool more = false;
      {
        std::lock_guard lock(mutex);
        ++finished;
        if (!result.ok()) failed = true;
        if (started < total && !failed) {
          ++started;
          more = true;
        }
        done_cv.notify_all();
      }
      if (more) start_one();
    });
  };
  {
    std::lock_guard lock(mutex);
    started = std::min<int64_t>(in_flight, total);
  }
  for (int64_t i = 0; i < std::min<int64_t>(in_flight, total); ++i) start_one();
  std::unique_lock lock(mutex);
  done_cv.wait(lock, [&] { return finished == started && (started == total || failed); });
  if (failed) state.SkipWithError("a call failed");
}

void BM_Bandwidth(benchmark::State& state) {
  Pair& pair = GetPair(ModeOf(state));
  const size_t size = static_cast<size_t>(state.range(0));
  Result<Buffer> buffer = pair.client->allocator().Allocate(size);
  if (!buffer.ok()) return state.SkipWithError(buffer.status().ToString().c_str());
  std::memset(buffer->data(), 0x3c, size);
  const std::vector<ConstSlice> request = {ConstSlice(buffer->data(), size)};
  constexpr int kInFlight = 8;
  constexpr int kBatch = 32;
  for (auto _ : state) RunInFlight(*pair.client, "ack", request, kInFlight, kBatch, state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatch * size));
  state.SetLabel(state.range(1) == 0 ? "event" : "busy");
}

void BM_SmallCallThroughput(benchmark::State& state) {
  Pair& pair = GetPair(ModeOf(state));
  std::vector<std::byte> payload(10, std::byte{1});
  const std::vector<ConstSlice> request = {ConstSlice(payload.data(), payload.size())};
  const int in_flight = static_cast<int>(state.range(0));
  constexpr int kBatch = 2000;
  for (auto _ : state) RunInFlight(*pair.client, "echo", request, in_flight, kBatch, state);
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(state.range(1) == 0 ? "event" : "busy");
}

BENCHMARK(BM_RoundTrip)
    ->ArgsProduct({{10, 10 * 1024, 1024 * 1024}, {0, 1}})
    ->ArgNames({"bytes", "busy"})
    ->UseRealTime();
BENCHMARK(BM_Bandwidth)
    ->ArgsProduct({{1024 * 1024, 10 * 1024 * 1024}, {0}})
    ->ArgNames({"bytes", "busy"})
    ->UseRealTime();
BENCHMARK(BM_SmallCallThroughput)
    ->ArgsProduct({{1, 16, 64}, {0}})
    ->ArgNames({"in_flight", "busy"})
    ->UseRealTime();

}  // namespace
}  // namespace artune::transport

BENCHMARK_MAIN();
