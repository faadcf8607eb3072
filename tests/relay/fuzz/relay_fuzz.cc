// libFuzzer: the relay's framing reader and Data requests on hostile input.
// The first byte picks the splitter's side and the piece size; the rest is a
// stream. Whatever it holds: the runs cover it exactly, and the Data request built
// from them decodes to the same bytes. The input is also decoded as a raw Data
// head (a hostile peer relay), which must be refused or decode within bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine_access.h"
#include "grpc_splitter.h"
#include "relay_wire.h"

namespace {

using artune::relay::ByteRun;
using artune::relay::GrpcSplitter;
using artune::transport::internal::EngineAccess;

// Refuses every allocation: payloads go from heap memory.
class NoAllocator : public artune::transport::Allocator {
 public:
  artune::Result<artune::transport::Buffer> Allocate(size_t) override {
    return artune::Status::ResourceExhausted("fuzz");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto side = (data[0] & 1) ? GrpcSplitter::Side::kServer : GrpcSplitter::Side::kClient;
  const size_t piece = 1 + (data[0] >> 1);
  const auto* bytes = reinterpret_cast<const std::byte*>(data + 1);
  const size_t length = size - 1;

  GrpcSplitter splitter(side);
  std::vector<ByteRun> runs;
  for (size_t offset = 0; offset < length; offset += piece) {
    const size_t take = length - offset < piece ? length - offset : piece;
    splitter.Feed({bytes + offset, take}, runs);
  }
  uint64_t covered = 0;
  for (const ByteRun& run : runs) covered += run.length;
  if (covered != length) std::abort();

  NoAllocator allocator;
  auto chunk = artune::relay::BuildChunk({}, {bytes, length}, runs, allocator);
  if (!chunk.ok()) std::abort();
  artune::transport::Message message;
  for (const auto& slice : chunk->slices) EngineAccess::AddSlice(message, slice);
  auto decoded = artune::relay::DecodeChunk(message);
  if (!decoded.ok() || decoded->bytes.size() != length ||
      (length > 0 && std::memcmp(decoded->bytes.data(), bytes, length) != 0)) {
    std::abort();
  }

  artune::transport::Message raw;
  EngineAccess::AddSlice(raw, {bytes, length});
  auto hostile = artune::relay::DecodeChunk(raw);
  if (hostile.ok() && hostile->bytes.size() > length) std::abort();
  return 0;
}
