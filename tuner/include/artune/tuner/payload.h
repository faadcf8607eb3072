// TF-gRPC-Bench payloads: a message made of several buffers whose sizes follow a
// class mix and a scheme, filled with deterministic content so that every response
// can be validated with checksums.
//
// Buffer classes (TF-gRPC-Bench):   Small  [1 B, 1 KiB)    default 10 B
//                                   Medium [1 KiB, 1 MiB)  default 10 KiB
//                                   Large  [1 MiB, 10 MiB] default 1 MiB
// Schemes:
//   uniform  the buffers are split evenly over the chosen classes (one or more),
//            placed round-robin in class order;
//   random   at least two classes; every chosen class appears at least once (when
//            there are enough buffers), the rest are drawn uniformly, and the
//            placement is shuffled;
//   skew     the classes are apportioned by percentage weights (default 60 % Large,
//            30 % Medium, 10 % Small) and the placement is shuffled.
// Everything is a pure function of the PayloadSpec (including its seed): the same
// spec always gives the same sizes, order and bytes.
//
// Threading: plain values; a Payload is immutable after generation and may be read
// from any number of threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"

namespace artune::tuner {

enum class BufferClass : uint8_t { kSmall = 0, kMedium = 1, kLarge = 2 };
inline constexpr int kBufferClassCount = 3;

enum class Scheme : uint8_t { kUniform, kRandom, kSkew };

// Sizes of a buffer within its class: the class's configured size for every
// buffer (TF-gRPC-Bench), or a seeded uniform draw over the class's whole range.
enum class SizeMode : uint8_t { kFixed, kRandomInClass };

struct ClassRange {
  uint64_t min_bytes = 0;  // inclusive
  uint64_t max_bytes = 0;  // inclusive
};
// Small [1, 1023], Medium [1024, 1 MiB - 1], Large [1 MiB, 10 MiB].
ClassRange RangeOf(BufferClass buffer_class);
// The class a buffer of `bytes` falls in; kInvalidArgument for 0 or > 10 MiB.
Result<BufferClass> ClassifySize(uint64_t bytes);

std::string_view BufferClassName(BufferClass buffer_class);  // "small", "medium", "large"
std::string_view SchemeName(Scheme scheme);                  // "uniform", "random", "skew"
Result<Scheme> ParseScheme(std::string_view text);
// "S,M,L", "small,large", "m" ... (case-insensitive, no duplicates).
Result<std::vector<BufferClass>> ParseClasses(std::string_view text);
std::string FormatClasses(std::span<const BufferClass> classes);  // "S,M,L"

// Percentages (or any non-negative relative weights, at least one positive) of the
// buffers in each class for the skew scheme, indexed by BufferClass.
struct SkewWeights {
  std::array<uint32_t, kBufferClassCount> weight = {10, 30, 60};
};
// Named biases: "large" {10,30,60} (the default), "medium" {20,60,20}, "small"
// {60,30,10}, or explicit "S,M,L" weights such as "5,15,80".
Result<SkewWeights> ParseSkewWeights(std::string_view text);
std::string FormatSkewWeights(const SkewWeights& weights);  // "10,30,60"

struct PayloadSpec {
  Scheme scheme = Scheme::kUniform;
  // uniform: one or more; random: at least two; skew: ignored (the weights decide).
  std::vector<BufferClass> classes = {BufferClass::kSmall};
  uint32_t buffer_count = 10;
  // The size of every buffer of a class under SizeMode::kFixed; must lie in the class.
  std::array<uint64_t, kBufferClassCount> class_bytes = {10, 10 * 1024, 1024 * 1024};
  SizeMode size_mode = SizeMode::kFixed;
  SkewWeights skew;
  uint64_t seed = 1;
};

// Rejects what cannot be generated: no buffers, more than kMaxBuffers, a class size
// outside its class, random with fewer than two classes, uniform with none, all-zero
// skew weights, duplicate classes. The message names the field, value and rule.
Status ValidateSpec(const PayloadSpec& spec);
inline constexpr uint32_t kMaxBuffers = 4096;

// The sizes and classes of the buffers, in message order, without content.
struct PayloadLayout {
  std::vector<BufferClass> classes;
  std::vector<uint64_t> sizes;
  uint64_t total_bytes = 0;
};
Result<PayloadLayout> PlanPayload(const PayloadSpec& spec);

// Number of buffers per class, indexed by BufferClass.
std::array<uint32_t, kBufferClassCount> CountByClass(const PayloadLayout& layout);

// A generated payload: content and the checksums responses are validated against.
class Payload {
 public:
  const PayloadSpec& spec() const { return spec_; }
  const PayloadLayout& layout() const { return layout_; }
  size_t buffer_count() const { return layout_.sizes.size(); }
  std::span<const std::byte> buffer(size_t i) const {
    return {storage_.data() + offsets_[i], layout_.sizes[i]};
  }
  uint64_t total_bytes() const { return layout_.total_bytes; }
  // XXH3-64 of each buffer, and of all buffers concatenated (what an ack carries).
  const std::vector<uint64_t>& buffer_checksums() const { return buffer_checksums_; }
  uint64_t stream_checksum() const { return stream_checksum_; }

 private:
  friend Result<Payload> GeneratePayload(const PayloadSpec& spec);
  friend Result<Payload> GeneratePayloadFromSizes(std::span<const uint64_t> sizes, uint64_t seed);
  PayloadSpec spec_;
  PayloadLayout layout_;
  std::vector<std::byte> storage_;  // all buffers back to back
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> buffer_checksums_;
  uint64_t stream_checksum_ = 0;
};

// Plans and fills a payload. Content of buffer i is a pure function of (seed, i).
Result<Payload> GeneratePayload(const PayloadSpec& spec);

// A payload with explicit buffer sizes (each 1 B..10 MiB, 1..kMaxBuffers of them),
// for replaying captured sizes; spec() then only carries the seed and buffer count.
// Content of buffer i is a pure function of (seed, i), as for GeneratePayload.
Result<Payload> GeneratePayloadFromSizes(std::span<const uint64_t> sizes, uint64_t seed);

// Fills `out` with the deterministic content stream for (seed, buffer_index).
void FillDeterministic(std::span<std::byte> out, uint64_t seed, uint64_t buffer_index);

}  // namespace artune::tuner
