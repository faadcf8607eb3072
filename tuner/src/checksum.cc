#include "artune/tuner/checksum.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

// The shared libxxhash, not the header inlined: Debian builds it with its x86
// dispatch, so XXH3 runs on AVX2/AVX-512 where the CPU has them, while code
// compiled here for baseline x86-64 gets SSE2 only: 32 against 16.5 GB/s on 1 MiB
// on the bench host (bench/side-by-side.md, 2026-11-28 02:50). The bandwidth
// rows hash every byte they move. The state type's size needs the static API.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace artune::tuner {
namespace {

std::string Hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

uint64_t TotalBytes(std::span<const ByteSpan> slices) {
  uint64_t total = 0;
  for (ByteSpan s : slices) total += s.size();
  return total;
}

}  // namespace

uint64_t Checksum(ByteSpan bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t StreamChecksum(std::span<const ByteSpan> slices) {
  if (slices.size() == 1) return Checksum(slices[0]);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (ByteSpan s : slices) XXH3_64bits_update(&state, s.data(), s.size());
  return XXH3_64bits_digest(&state);
}

Ack ComputeAck(std::span<const ByteSpan> received) {
  return {TotalBytes(received), StreamChecksum(received)};
}

std::array<std::byte, kAckBytes> EncodeAck(const Ack& ack) {
  std::array<std::byte, kAckBytes> out;
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<std::byte>(ack.total_bytes >> (8 * i));
    out[8 + i] = static_cast<std::byte>(ack.checksum >> (8 * i));
  }
  return out;
}

Result<Ack> DecodeAck(std::span<const ByteSpan> reply) {
  uint64_t total = TotalBytes(reply);
  if (total != kAckBytes) {
    return Status::Corruption("ack reply is " + std::to_string(total) + " bytes, expected " +
                              std::to_string(kAckBytes) +
                              ": the server is not an artune bench server");
  }
  std::array<std::byte, kAckBytes> bytes;
  size_t at = 0;
  for (ByteSpan s : reply) {
    std::memcpy(bytes.data() + at, s.data(), s.size());
    at += s.size();
  }
  Ack ack;
  for (int i = 0; i < 8; ++i) {
    ack.total_bytes |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    ack.checksum |= static_cast<uint64_t>(bytes[8 + i]) << (8 * i);
  }
  return ack;
}

Status ValidateEcho(std::span<const ByteSpan> reply, const Payload& expected) {
  uint64_t total = TotalBytes(reply);
  if (total != expected.total_bytes()) {
    return Status::Corruption("echo reply is " + std::to_string(total) + " bytes, sent " +
                              std::to_string(expected.total_bytes()));
  }
  // Walk the reply slices as one stream, cutting it at the sent buffers' boundaries.
  size_t slice = 0;
  size_t slice_offset = 0;
  XXH3_state_t state;
  for (size_t b = 0; b < expected.buffer_count(); ++b) {
    while (slice < reply.size() && slice_offset == reply[slice].size()) {  // skip used/empty
      ++slice;
      slice_offset = 0;
    }
    uint64_t want = expected.layout().sizes[b];
    uint64_t checksum;
    if (slice < reply.size() && reply[slice].size() - slice_offset >= want) {
      // The common case: the buffer lies in one received slice.
      checksum = Checksum(reply[slice].subspan(slice_offset, want));
      slice_offset += want;
    } else {
      XXH3_64bits_reset(&state);
      uint64_t left = want;
      while (left > 0) {
        ByteSpan s = reply[slice];
        uint64_t take = std::min<uint64_t>(left, s.size() - slice_offset);
        XXH3_64bits_update(&state, s.data() + slice_offset, take);
        slice_offset += take;
        left -= take;
        if (slice_offset == s.size()) {
          ++slice;
          slice_offset = 0;
        }
      }
      checksum = XXH3_64bits_digest(&state);
    }
    if (checksum != expected.buffer_checksums()[b]) {
      return Status::Corruption("echo reply buffer " + std::to_string(b) + " (" +
                                std::to_string(want) + " bytes) has checksum " + Hex(checksum) +
                                ", sent " + Hex(expected.buffer_checksums()[b]) +
                                ": the payload was corrupted in transit");
    }
  }
  return Status::Ok();
}

Status ValidateAck(std::span<const ByteSpan> reply, const Payload& expected) {
  ARTUNE_ASSIGN_OR_RETURN(Ack ack, DecodeAck(reply));
  if (ack.total_bytes != expected.total_bytes() || ack.checksum != expected.stream_checksum()) {
    return Status::Corruption("the server received " + std::to_string(ack.total_bytes) +
                              " bytes with checksum " + Hex(ack.checksum) + ", sent " +
                              std::to_string(expected.total_bytes()) + " bytes with checksum " +
                              Hex(expected.stream_checksum()) +
                              ": the payload was corrupted in transit");
  }
  return Status::Ok();
}

Ack CountAck(std::span<const ByteSpan> received) { return {TotalBytes(received), 0}; }

Status ValidateCount(std::span<const ByteSpan> reply, const Payload& expected) {
  ARTUNE_ASSIGN_OR_RETURN(Ack ack, DecodeAck(reply));
  if (ack.total_bytes != expected.total_bytes()) {
    return Status::Corruption("the server received " + std::to_string(ack.total_bytes) +
                              " bytes, sent " + std::to_string(expected.total_bytes()));
  }
  return Status::Ok();
}

}  // namespace artune::tuner
