// Decoding speed of the probes on gRPC tensor traffic (one thread = one core):
//   BM_DecodeHttp2Grpc   HTTP/2 + HPACK + gRPC + RecvTensor head, from memory
//   BM_DecodeNonHttp2Noise  16 MB of random bytes joined midway: the resync search
//   BM_DecodeSavedPcap   the whole pcap path from a saved capture file: libpcap
//                        read, link/IP/TCP parse, reassembly, decode, classify
// Bytes processed = TCP payload bytes. Target: >= 1 GB/s per core.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "artune/probes/backend.h"
#include "artune/probes/http2_decoder.h"
#include "artune/probes/session.h"
#include "h2_builder.h"

namespace artune::probes {
namespace {

// A parameter-server-like mix: many medium and some large RecvTensor responses,
// small status calls, in 16 KiB DATA frames (gRPC's default frame size).
std::vector<testing::CallSpec> TensorTraffic() {
  std::vector<testing::CallSpec> calls;
  for (int i = 0; i < 40; ++i) {
    calls.push_back({std::string(kRecvTensorMethod), 80, 0, {256, 256}, 16384});
    calls.push_back({std::string(kRecvTensorMethod), 80, 0, {1024, 1024}, 16384});
    calls.push_back({std::string(kRecvTensorMethod), 80, 0, {64}, 16384});
    calls.push_back({"/tensorflow.WorkerService/GetStatus", 0, 200, {}, 16384});
  }
  return calls;
}

class NullObserver : public GrpcMessageObserver {
 public:
  void OnGrpcMessage(const GrpcMessage& m) override { benchmark::DoNotOptimize(m.length); }
};

void BM_DecodeHttp2Grpc(benchmark::State& state) {
  const auto conversation = testing::BuildConversation(TensorTraffic());
  const size_t segment = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    NullObserver observer;
    DecodeErrorCounts errors;
    Http2ConnectionDecoder decoder(1, observer, errors);
    decoder.Begin(0, FlowOrigin::kHandshake);
    decoder.Begin(1, FlowOrigin::kHandshake);
    int side = 0;
    for (const testing::Bytes* bytes : {&conversation.client, &conversation.server}) {
      for (size_t offset = 0; offset < bytes->size(); offset += segment) {
        const size_t take = std::min(segment, bytes->size() - offset);
        decoder.Feed(side, std::span<const uint8_t>(bytes->data() + offset, take), offset);
      }
      ++side;
    }
    decoder.End(0);
    decoder.End(1);
    if (errors.Total() != 0) state.SkipWithError("decode errors in clean traffic");
  }
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations()) *
      static_cast<int64_t>(conversation.client.size() + conversation.server.size()));
}
// Segment sizes: Ethernet MSS, and loopback's 64 KiB segments.
BENCHMARK(BM_DecodeHttp2Grpc)->Arg(1448)->Arg(65483);

// A flow that is not HTTP/2, joined midway: every byte goes through the resync
// search and is discarded (issue 16: within 2x of BM_DecodeHttp2Grpc's speed).
void BM_DecodeNonHttp2Noise(benchmark::State& state) {
  testing::Bytes noise(16 << 20);
  uint64_t x = 88172645463325252ull;  // xorshift64: cheap, fixed noise
  for (auto& byte : noise) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    byte = static_cast<uint8_t>(x);
  }
  const size_t segment = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    NullObserver observer;
    DecodeErrorCounts errors;
    Http2ConnectionDecoder decoder(1, observer, errors);
    decoder.Begin(1, FlowOrigin::kMidStream);
    for (size_t offset = 0; offset < noise.size(); offset += segment) {
      const size_t take = std::min(segment, noise.size() - offset);
      decoder.Feed(1, std::span<const uint8_t>(noise.data() + offset, take), offset);
    }
    decoder.End(1);
    benchmark::DoNotOptimize(decoder.stats().discarded_bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(noise.size()));
}
BENCHMARK(BM_DecodeNonHttp2Noise)->Arg(1448)->Arg(65483)->Unit(benchmark::kMillisecond);

void BM_DecodeSavedPcap(benchmark::State& state) {
  const auto conversation = testing::BuildConversation(TensorTraffic());
  const size_t mss = static_cast<size_t>(state.range(0));
  const Endpoint client = testing::Ipv4(127, 0, 0, 1, 40000);
  const Endpoint server = testing::Ipv4(127, 0, 0, 1, 50051);
  auto packets = testing::Segment({client, server}, conversation.client, 1, mss, true, true);
  const auto responses =
      testing::Segment({server, client}, conversation.server, 2, mss, true, true);
  packets.insert(packets.end(), responses.begin(), responses.end());
  const std::string path = testing::TempPath("bench.pcap");
  testing::WritePcap(path, packets);
  uint64_t messages = 0;
  for (auto _ : state) {
    BackendOptions options;
    options.pcap.read_file = path;
    auto backend = CreateCaptureBackend(options);
    if (!backend.ok() || !(*backend)->Start().ok()) {
      state.SkipWithError("cannot open the saved capture");
      break;
    }
    ProbeSession session;
    if (!(*backend)->Run(session, StopCondition{}).ok()) state.SkipWithError("run failed");
    messages = session.messages();
    benchmark::DoNotOptimize(session.Finish("pcap", (*backend)->counters(), 0));
  }
  state.counters["messages"] = static_cast<double>(messages);
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations()) *
      static_cast<int64_t>(conversation.client.size() + conversation.server.size()));
  std::filesystem::remove(path);
}
BENCHMARK(BM_DecodeSavedPcap)->Arg(1448)->Arg(65483)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace artune::probes

BENCHMARK_MAIN();
