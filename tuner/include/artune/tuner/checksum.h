// Payload validation: XXH3-64 checksums of buffers, checked against what came back.
//
// Responses may arrive cut into slices that do not match the sent buffers (gRPC
// hands back HTTP/2 frames; the embedded transport keeps the sender's slices), so
// every check here walks the received slices as one byte stream and hashes it
// along the expected buffer boundaries.
//
// Two wire replies exist:
//   echo  the server returns the request's bytes; checked buffer by buffer.
//   ack   the server returns kAckBytes: little-endian u64 byte count followed by
//         u64 XXH3-64 of every byte it received, concatenated.
//   count the same reply with the checksum 0: the server counts the bytes and
//         hashes nothing (bandwidth without the server-side checksum, for a fair
//         comparison with benchmarks that check nothing, as UCX's perftest).
//
// All functions are pure and thread-safe. A mismatch is kCorruption naming the
// buffer, the sizes or checksums involved.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "artune/status.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {

using ByteSpan = std::span<const std::byte>;

uint64_t Checksum(ByteSpan bytes);

// XXH3-64 of the concatenation of `slices`, without copying them together.
uint64_t StreamChecksum(std::span<const ByteSpan> slices);

inline constexpr size_t kAckBytes = 16;
struct Ack {
  uint64_t total_bytes = 0;
  uint64_t checksum = 0;
};
// What the server replies to an ack request: byte count and StreamChecksum.
Ack ComputeAck(std::span<const ByteSpan> received);
std::array<std::byte, kAckBytes> EncodeAck(const Ack& ack);
// kCorruption when the reply is not exactly kAckBytes long (the slices may split it).
Result<Ack> DecodeAck(std::span<const ByteSpan> reply);

// Echo reply: same total length, and each expected buffer's bytes hash to its
// checksum.
Status ValidateEcho(std::span<const ByteSpan> reply, const Payload& expected);
// Ack reply: the server saw exactly the payload's bytes.
Status ValidateAck(std::span<const ByteSpan> reply, const Payload& expected);
// Count reply: what the server answers (CountAck) and the check of it: the server
// received as many bytes as were sent.
Ack CountAck(std::span<const ByteSpan> received);
Status ValidateCount(std::span<const ByteSpan> reply, const Payload& expected);

}  // namespace artune::tuner
