// Malformed inputs (tests/probes/corpus, written by generate.py) through the
// decoder: each must be skipped and counted by kind, never crash, and still yield
// the gRPC messages around the damage — whatever the chunking of the input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "artune/probes/http2_decoder.h"

namespace artune::probes {
namespace {

struct Expectation {
  uint64_t messages = 0;
  std::map<std::string, uint64_t> errors;
};

std::map<std::string, Expectation> ReadExpectations() {
  std::map<std::string, Expectation> out;
  std::ifstream in(std::string(ARTUNE_PROBES_CORPUS_DIR) + "/EXPECTED");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, field;
    fields >> name;
    Expectation& e = out[name];
    while (fields >> field) {
      const size_t eq = field.find('=');
      const std::string key = field.substr(0, eq);
      const uint64_t value = std::stoull(field.substr(eq + 1));
      if (key == "messages") {
        e.messages = value;
      } else {
        e.errors[key] = value;
      }
    }
  }
  return out;
}

class Counter : public GrpcMessageObserver {
 public:
  void OnGrpcMessage(const GrpcMessage&) override { ++messages; }
  uint64_t messages = 0;
};

TEST(Corpus, EveryMalformedInputIsCountedByKind) {
  const auto expectations = ReadExpectations();
  ASSERT_GE(expectations.size(), 15u);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ARTUNE_PROBES_CORPUS_DIR)) {
    if (entry.path().extension() != ".h2") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    auto it = expectations.find(name);
    ASSERT_NE(it, expectations.end()) << name << " has no line in EXPECTED";
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{1400}, bytes.size() + 1}) {
      Counter counter;
      DecodeErrorCounts errors;
      Http2ConnectionDecoder decoder(1, counter, errors);
      decoder.Begin(0, FlowOrigin::kHandshake);
      for (size_t offset = 0; offset < bytes.size(); offset += chunk) {
        const size_t take = std::min(chunk, bytes.size() - offset);
        decoder.Feed(0, std::span<const uint8_t>(bytes.data() + offset, take), 0);
      }
      decoder.End(0);
      std::map<std::string, uint64_t> seen;
      for (size_t i = 0; i < errors.counts.size(); ++i) {
        if (errors.counts[i] > 0)
          seen[DecodeErrorName(static_cast<DecodeError>(i))] = errors.counts[i];
      }
      EXPECT_EQ(seen, it->second.errors) << name << " in chunks of " << chunk;
      EXPECT_EQ(counter.messages, it->second.messages) << name << " in chunks of " << chunk;
    }
  }
  EXPECT_EQ(files, expectations.size());
}

}  // namespace
}  // namespace artune::probes
