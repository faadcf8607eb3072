#include "artune/tuner/checksum.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

namespace artune::tuner {
namespace {

Payload MakePayload() {
  PayloadSpec spec;
  spec.scheme = Scheme::kRandom;
  spec.classes = {BufferClass::kSmall, BufferClass::kMedium};
  spec.buffer_count = 6;
  return *GeneratePayload(spec);
}

// The payload as one contiguous copy (what a receiver might hand back).
std::vector<std::byte> Flatten(const Payload& payload) {
  std::vector<std::byte> bytes;
  for (size_t i = 0; i < payload.buffer_count(); ++i) {
    bytes.insert(bytes.end(), payload.buffer(i).begin(), payload.buffer(i).end());
  }
  return bytes;
}

// Cuts `bytes` into slices of `piece` bytes (the last may be shorter).
std::vector<ByteSpan> Cut(const std::vector<std::byte>& bytes, size_t piece) {
  std::vector<ByteSpan> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return slices;
}

// An ack crosses processes that may be different builds: the checksum is XXH3-64
// with seed 0, whichever implementation computes it (these values are the
// reference implementation's, the header inlined and the library alike).
TEST(ChecksumTest, IsXxh3SixtyFourOfTheBytes) {
  const std::string word = "artune";
  EXPECT_EQ(Checksum(std::as_bytes(std::span(word))), 0x5850de3dc093b2c4u);
  std::vector<std::byte> mebibyte(1 << 20);
  for (size_t i = 0; i < mebibyte.size(); ++i) mebibyte[i] = static_cast<std::byte>(i * 131 + 7);
  EXPECT_EQ(Checksum(mebibyte), 0x6f7c82505ffbc516u);
  // Streamed across slices: the same value.
  EXPECT_EQ(StreamChecksum(Cut(mebibyte, 4099)), 0x6f7c82505ffbc516u);
}

TEST(ChecksumTest, EchoOfTheSentSlicesValidates) {
  Payload payload = MakePayload();
  std::vector<ByteSpan> slices;
  for (size_t i = 0; i < payload.buffer_count(); ++i) slices.push_back(payload.buffer(i));
  EXPECT_TRUE(ValidateEcho(slices, payload).ok());
}

TEST(ChecksumTest, EchoCutAnywhereValidates) {
  Payload payload = MakePayload();
  auto bytes = Flatten(payload);
  for (size_t piece : {1u, 7u, 1000u, 4096u, 1u << 20}) {
    auto slices = Cut(bytes, piece);
    slices.insert(slices.begin() + slices.size() / 2, ByteSpan{});  // an empty slice too
    EXPECT_TRUE(ValidateEcho(slices, payload).ok()) << "piece " << piece;
  }
}

TEST(ChecksumTest, OneCorruptedByteFailsTheEcho) {
  Payload payload = MakePayload();
  auto bytes = Flatten(payload);
  bytes[bytes.size() / 2] ^= std::byte{0x01};
  auto status = ValidateEcho(Cut(bytes, 333), payload);
  EXPECT_EQ(status.code(), ErrorCode::kCorruption);
  EXPECT_NE(status.message().find("checksum"), std::string::npos);
}

TEST(ChecksumTest, ShortEchoFails) {
  Payload payload = MakePayload();
  auto bytes = Flatten(payload);
  bytes.pop_back();
  EXPECT_EQ(ValidateEcho(Cut(bytes, 100), payload).code(), ErrorCode::kCorruption);
}

TEST(ChecksumTest, AckRoundTripsAndValidates) {
  Payload payload = MakePayload();
  auto bytes = Flatten(payload);
  std::vector<ByteSpan> received = Cut(bytes, 77);
  Ack ack = ComputeAck(received);
  EXPECT_EQ(ack.total_bytes, payload.total_bytes());
  EXPECT_EQ(ack.checksum, payload.stream_checksum());
  auto encoded = EncodeAck(ack);
  std::vector<ByteSpan> reply = {ByteSpan(encoded.data(), 5), ByteSpan(encoded.data() + 5, 11)};
  auto decoded = DecodeAck(reply);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->total_bytes, ack.total_bytes);
  EXPECT_EQ(decoded->checksum, ack.checksum);
  EXPECT_TRUE(ValidateAck(reply, payload).ok());
}

TEST(ChecksumTest, AckOfCorruptedBytesFails) {
  Payload payload = MakePayload();
  auto bytes = Flatten(payload);
  bytes[0] ^= std::byte{0x80};
  auto encoded = EncodeAck(ComputeAck(Cut(bytes, 1 << 20)));
  std::vector<ByteSpan> reply = {ByteSpan(encoded)};
  EXPECT_EQ(ValidateAck(reply, payload).code(), ErrorCode::kCorruption);
}

// The count reply checks the length only: a flipped byte passes (that is what
// --no-checksum gives up), a lost one does not.
TEST(ChecksumTest, CountChecksTheLengthOnly) {
  Payload payload = MakePayload();
  auto bytes = Flatten(payload);
  Ack count = CountAck(Cut(bytes, 77));
  EXPECT_EQ(count.total_bytes, payload.total_bytes());
  EXPECT_EQ(count.checksum, 0u);
  bytes[0] ^= std::byte{0x80};
  auto flipped = EncodeAck(CountAck(Cut(bytes, 1 << 20)));
  EXPECT_TRUE(ValidateCount(std::vector<ByteSpan>{ByteSpan(flipped)}, payload).ok());
  const std::vector<ByteSpan> one_lost = {ByteSpan(bytes.data(), bytes.size() - 1)};
  auto short_by_one = EncodeAck(CountAck(one_lost));
  EXPECT_EQ(ValidateCount(std::vector<ByteSpan>{ByteSpan(short_by_one)}, payload).code(),
            ErrorCode::kCorruption);
}

TEST(ChecksumTest, MalformedAckFails) {
  std::array<std::byte, 15> short_reply{};
  std::vector<ByteSpan> reply = {ByteSpan(short_reply)};
  EXPECT_EQ(DecodeAck(reply).status().code(), ErrorCode::kCorruption);
}

}  // namespace
}  // namespace artune::tuner
