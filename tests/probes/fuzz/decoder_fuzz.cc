// libFuzzer target: arbitrary bytes as the two directions of one HTTP/2
// connection. The first byte picks the chunk size, how each side starts and how
// the input is split between the sides; the rest is fed to the decoder.
#include <cstddef>
#include <cstdint>
#include <span>

#include "artune/probes/http2_decoder.h"

namespace {

class Sink : public artune::probes::GrpcMessageObserver {
 public:
  void OnGrpcMessage(const artune::probes::GrpcMessage& message) override {
    total += message.length + message.method.size();
  }
  uint64_t total = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace artune::probes;
  if (size < 2) return 0;
  const uint8_t control = data[0];
  const uint8_t split_byte = data[1];
  data += 2;
  size -= 2;
  const size_t chunk = size_t{1} << (control & 0x0f);
  const size_t split = size * split_byte / 255;
  Sink sink;
  DecodeErrorCounts errors;
  DecoderLimits limits;
  limits.resync_buffer_bytes = 4096;  // small, so the full-buffer paths are reached
  limits.max_open_streams = 16;
  Http2ConnectionDecoder decoder(1, sink, errors, limits);
  decoder.Begin(0, (control & 0x10) ? FlowOrigin::kMidStream : FlowOrigin::kHandshake);
  decoder.Begin(1, (control & 0x20) ? FlowOrigin::kMidStream : FlowOrigin::kHandshake);
  const std::span<const uint8_t> sides[2] = {{data, split}, {data + split, size - split}};
  size_t offsets[2] = {0, 0};
  while (offsets[0] < sides[0].size() || offsets[1] < sides[1].size()) {
    for (int side = 0; side < 2; ++side) {
      const size_t take = std::min(chunk, sides[side].size() - offsets[side]);
      if (take == 0) continue;
      decoder.Feed(side, sides[side].subspan(offsets[side], take), offsets[side]);
      offsets[side] += take;
      if ((control & 0x40) && side == 1 && offsets[1] == take) decoder.Gap(1, 100);
    }
  }
  decoder.End(0);
  decoder.End(1);
  return 0;
}
