// The relay's gRPC framing reader: every byte classified once, each message's
// payload found across DATA frames, padding and interleaved streams; anything that
// is not HTTP/2 carried opaquely. Feeding in any pieces gives the same runs.
#include "grpc_splitter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace artune::relay {
namespace {

using Bytes = std::vector<std::byte>;

void Append(Bytes& out, const std::string& text) {
  for (char c : text) out.push_back(static_cast<std::byte>(c));
}

void Frame(Bytes& out, uint8_t type, uint8_t flags, uint32_t stream, const Bytes& payload) {
  const uint32_t length = static_cast<uint32_t>(payload.size());
  for (uint8_t byte : {static_cast<uint8_t>(length >> 16), static_cast<uint8_t>(length >> 8),
                       static_cast<uint8_t>(length), type, flags,
                       static_cast<uint8_t>(stream >> 24), static_cast<uint8_t>(stream >> 16),
                       static_cast<uint8_t>(stream >> 8), static_cast<uint8_t>(stream)}) {
    out.push_back(std::byte{byte});
  }
  out.insert(out.end(), payload.begin(), payload.end());
}

Bytes GrpcMessage(const Bytes& body) {
  Bytes out{std::byte{0}};
  const uint32_t length = static_cast<uint32_t>(body.size());
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<std::byte>(length >> shift));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes Pattern(size_t size, uint8_t seed) {
  Bytes out(size);
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>(seed + i * 7);
  return out;
}

// Payload bytes of each message, from the runs over `stream`.
std::map<uint64_t, Bytes> Messages(const Bytes& stream, const std::vector<ByteRun>& runs) {
  std::map<uint64_t, Bytes> messages;
  size_t offset = 0;
  for (const ByteRun& run : runs) {
    if (run.message != 0) {
      Bytes& message = messages[run.message];
      message.insert(message.end(), stream.begin() + offset, stream.begin() + offset + run.length);
    }
    offset += run.length;
  }
  EXPECT_EQ(offset, stream.size()) << "the runs must cover the stream exactly";
  return messages;
}

std::vector<ByteRun> FeedInPieces(GrpcSplitter::Side side, const Bytes& stream, size_t piece) {
  GrpcSplitter splitter(side);
  std::vector<ByteRun> runs;
  for (size_t offset = 0; offset < stream.size(); offset += piece) {
    splitter.Feed(std::span(stream).subspan(offset, std::min(piece, stream.size() - offset)), runs);
  }
  return runs;
}

// A client stream: preface, SETTINGS, then two streams whose messages cross DATA
// frames (one padded) and interleave.
Bytes ClientStream(const Bytes& big, const Bytes& small) {
  Bytes stream;
  Append(stream, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  Frame(stream, 4, 0, 0, Pattern(12, 1));  // SETTINGS
  Frame(stream, 1, 4, 1, Pattern(30, 2));  // HEADERS, stream 1
  Frame(stream, 1, 4, 3, Pattern(20, 3));  // HEADERS, stream 3
  const Bytes big_message = GrpcMessage(big);
  const Bytes small_message = GrpcMessage(small);
  // Stream 1's message in three DATA frames; stream 3's whole between them.
  Frame(stream, 0, 0, 1, Bytes(big_message.begin(), big_message.begin() + 3));
  Frame(stream, 0, 0, 3, small_message);
  Bytes padded{std::byte{4}};  // PADDED: pad length 4
  padded.insert(padded.end(), big_message.begin() + 3, big_message.begin() + 1000);
  padded.insert(padded.end(), 4, std::byte{0});
  Frame(stream, 0, 0x8, 1, padded);
  Frame(stream, 8, 0, 0, Pattern(4, 5));  // WINDOW_UPDATE
  Frame(stream, 0, 1, 1, Bytes(big_message.begin() + 1000, big_message.end()));
  return stream;
}

TEST(GrpcSplitterTest, FindsEachMessageAcrossFramesAndStreams) {
  const Bytes big = Pattern(5000, 11), small = Pattern(40, 99);
  const Bytes stream = ClientStream(big, small);
  GrpcSplitter splitter(GrpcSplitter::Side::kClient);
  std::vector<ByteRun> runs;
  splitter.Feed(stream, runs);
  EXPECT_FALSE(splitter.opaque());
  const auto messages = Messages(stream, runs);
  ASSERT_EQ(messages.size(), 2u);
  // Stream 3's message starts first: stream 1's prefix is cut by a frame boundary.
  EXPECT_EQ(messages.at(2), big);
  EXPECT_EQ(messages.at(1), small);
  uint64_t literal = 0;
  for (const ByteRun& run : runs) literal += run.message == 0 ? run.length : 0;
  EXPECT_EQ(literal, stream.size() - big.size() - small.size());
}

TEST(GrpcSplitterTest, AnyPiecesGiveTheSameBytes) {
  const Bytes big = Pattern(3000, 7), small = Pattern(1, 3);
  const Bytes stream = ClientStream(big, small);
  for (size_t piece : {1u, 2u, 5u, 9u, 13u, 64u, 1000u}) {
    const auto messages =
        Messages(stream, FeedInPieces(GrpcSplitter::Side::kClient, stream, piece));
    ASSERT_EQ(messages.size(), 2u) << "piece " << piece;
    EXPECT_EQ(messages.at(2), big) << "piece " << piece;
    EXPECT_EQ(messages.at(1), small) << "piece " << piece;
  }
}

TEST(GrpcSplitterTest, ServerSideStartsWithSettings) {
  Bytes stream;
  Frame(stream, 4, 0, 0, {});
  Frame(stream, 1, 4, 1, Pattern(10, 1));
  const Bytes body = Pattern(100, 2);
  Frame(stream, 0, 0, 1, GrpcMessage(body));
  Frame(stream, 1, 5, 1, Pattern(10, 3));  // trailers end the stream
  GrpcSplitter splitter(GrpcSplitter::Side::kServer);
  std::vector<ByteRun> runs;
  splitter.Feed(stream, runs);
  const auto messages = Messages(stream, runs);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages.at(1), body);
}

TEST(GrpcSplitterTest, NotHttp2IsOpaque) {
  Bytes stream;
  Append(stream, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  GrpcSplitter client(GrpcSplitter::Side::kClient);
  std::vector<ByteRun> runs;
  client.Feed(stream, runs);
  EXPECT_TRUE(client.opaque());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].message, 0u);
  EXPECT_EQ(runs[0].length, stream.size());
  // A server whose first frame is not SETTINGS.
  Bytes server_stream;
  Frame(server_stream, 0, 0, 1, GrpcMessage(Pattern(10, 1)));
  GrpcSplitter server(GrpcSplitter::Side::kServer);
  runs.clear();
  server.Feed(server_stream, runs);
  EXPECT_TRUE(server.opaque());
  EXPECT_TRUE(Messages(server_stream, runs).empty());
}

TEST(GrpcSplitterTest, BadPaddingGoesOpaque) {
  Bytes stream;
  Frame(stream, 4, 0, 0, {});
  Frame(stream, 0, 0x8, 1, Bytes{std::byte{200}, std::byte{1}});  // pad longer than frame
  GrpcSplitter splitter(GrpcSplitter::Side::kServer);
  std::vector<ByteRun> runs;
  splitter.Feed(stream, runs);
  EXPECT_TRUE(splitter.opaque());
  Messages(stream, runs);  // still covers every byte
}

// Random and mutated streams: whatever comes, the runs cover the input exactly.
TEST(GrpcSplitterTest, RandomInputIsCoveredExactly) {
  std::mt19937 random(22);
  const Bytes valid = ClientStream(Pattern(1700, 1), Pattern(30, 2));
  for (int round = 0; round < 2000; ++round) {
    Bytes stream = valid;
    const int mutations = static_cast<int>(random() % 8);
    for (int m = 0; m < mutations; ++m) {
      stream[random() % stream.size()] = static_cast<std::byte>(random());
    }
    if (round % 4 == 0) stream.resize(random() % stream.size());
    const size_t piece = 1 + random() % 50;
    for (auto side : {GrpcSplitter::Side::kClient, GrpcSplitter::Side::kServer}) {
      const auto runs = FeedInPieces(side, stream, piece);
      uint64_t covered = 0;
      for (const ByteRun& run : runs) {
        EXPECT_GT(run.length, 0u);
        covered += run.length;
      }
      ASSERT_EQ(covered, stream.size()) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace artune::relay
