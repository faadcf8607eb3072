#include "artune/tuner/payload.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <numeric>
#include <optional>

#include "artune/base/enum_names.h"
#include "artune/base/text.h"
#include "artune/tuner/checksum.h"

namespace artune::tuner {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;
__extension__ typedef unsigned __int128 Uint128;  // GCC/Clang; -Wpedantic wants the marker

// splitmix64: tiny, fast, and identical on every platform and standard library
// (std::uniform_int_distribution is not), which the reproducibility promise needs.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) for bound > 0 (multiply-high; the bias is below 2^-32
  // for every bound used here, irrelevant for benchmark payloads).
  uint64_t Below(uint64_t bound) {
    return static_cast<uint64_t>((static_cast<Uint128>(Next()) * bound) >> 64);
  }

 private:
  uint64_t state_;
};

// Separate streams for the layout and for each buffer's content.
constexpr uint64_t kLayoutStream = 0x6c61796f7574ULL;  // "layout"
uint64_t ContentSeed(uint64_t seed, uint64_t index) {
  SplitMix64 mix(seed ^ (index * 0xd1b54a32d192ed03ULL));
  return mix.Next();
}

template <typename Rng>
void Shuffle(std::vector<BufferClass>& classes, Rng& rng) {
  for (size_t i = classes.size(); i > 1; --i) {
    std::swap(classes[i - 1], classes[rng.Below(i)]);
  }
}

// Largest-remainder apportionment of `count` buffers by `weights`; ties go to the
// larger class, so the default 60/30/10 of 10 buffers is exactly 6/3/1.
std::array<uint32_t, kBufferClassCount> Apportion(uint32_t count, const SkewWeights& weights) {
  uint64_t total = 0;
  for (uint32_t w : weights.weight) total += w;
  std::array<uint32_t, kBufferClassCount> shares{};
  std::array<uint64_t, kBufferClassCount> remainders{};
  uint32_t assigned = 0;
  for (int c = 0; c < kBufferClassCount; ++c) {
    uint64_t scaled = static_cast<uint64_t>(count) * weights.weight[c];
    shares[c] = static_cast<uint32_t>(scaled / total);
    remainders[c] = scaled % total;
    assigned += shares[c];
  }
  while (assigned < count) {
    int best = kBufferClassCount - 1;
    for (int c = kBufferClassCount - 1; c >= 0; --c) {
      if (remainders[c] > remainders[best]) best = c;
    }
    ++shares[best];
    remainders[best] = 0;
    ++assigned;
  }
  return shares;
}

}  // namespace

ClassRange RangeOf(BufferClass buffer_class) {
  switch (buffer_class) {
    case BufferClass::kSmall:
      return {1, kKiB - 1};
    case BufferClass::kMedium:
      return {kKiB, kMiB - 1};
    case BufferClass::kLarge:
      return {kMiB, 10 * kMiB};
  }
  return {};
}

Result<BufferClass> ClassifySize(uint64_t bytes) {
  for (int c = 0; c < kBufferClassCount; ++c) {
    ClassRange range = RangeOf(static_cast<BufferClass>(c));
    if (bytes >= range.min_bytes && bytes <= range.max_bytes) return static_cast<BufferClass>(c);
  }
  return Status::InvalidArgument("buffer size " + std::to_string(bytes) +
                                 " bytes is outside every TF-gRPC-Bench class (1 B .. 10 MiB)");
}

std::string_view BufferClassName(BufferClass buffer_class) {
  static constexpr std::array<EnumName<BufferClass>, 3> kNames = {{
      {BufferClass::kSmall, "small"},
      {BufferClass::kMedium, "medium"},
      {BufferClass::kLarge, "large"},
  }};
  return NameOf(kNames, buffer_class);
}

constexpr std::array<EnumName<Scheme>, 3> kSchemeNames = {{
    {Scheme::kUniform, "uniform"},
    {Scheme::kRandom, "random"},
    {Scheme::kSkew, "skew"},
}};

std::string_view SchemeName(Scheme scheme) { return NameOf(kSchemeNames, scheme); }

Result<Scheme> ParseScheme(std::string_view text) {
  if (std::optional<Scheme> scheme = ValueNamed(kSchemeNames, Lower(text))) return *scheme;
  return Status::InvalidArgument("unknown payload scheme '" + std::string(text) + "': use " +
                                 NameList(kSchemeNames, " or "));
}

Result<std::vector<BufferClass>> ParseClasses(std::string_view text) {
  std::vector<BufferClass> classes;
  for (const std::string& part : SplitComma(text)) {
    std::string lower = Lower(part);
    BufferClass parsed;
    if (lower == "s" || lower == "small") {
      parsed = BufferClass::kSmall;
    } else if (lower == "m" || lower == "medium") {
      parsed = BufferClass::kMedium;
    } else if (lower == "l" || lower == "large") {
      parsed = BufferClass::kLarge;
    } else {
      return Status::InvalidArgument("unknown buffer class '" + part + "' in '" +
                                     std::string(text) + "': use S, M, L (small, medium, large)");
    }
    if (std::find(classes.begin(), classes.end(), parsed) != classes.end()) {
      return Status::InvalidArgument("buffer class '" + part + "' appears twice in '" +
                                     std::string(text) + "'");
    }
    classes.push_back(parsed);
  }
  return classes;
}

std::string FormatClasses(std::span<const BufferClass> classes) {
  std::string out;
  for (BufferClass c : classes) {
    if (!out.empty()) out += ',';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(BufferClassName(c)[0])));
  }
  return out;
}

Result<SkewWeights> ParseSkewWeights(std::string_view text) {
  std::string lower = Lower(Trim(text));
  if (lower == "large") return SkewWeights{{10, 30, 60}};
  if (lower == "medium") return SkewWeights{{20, 60, 20}};
  if (lower == "small") return SkewWeights{{60, 30, 10}};
  std::vector<std::string> parts = SplitComma(text);
  const std::string hint = "': use large, medium, small or three weights S,M,L such as 10,30,60";
  if (parts.size() != kBufferClassCount) {
    return Status::InvalidArgument("bad skew weights '" + std::string(text) + hint);
  }
  SkewWeights weights;
  for (int c = 0; c < kBufferClassCount; ++c) {
    const std::string& part = parts[c];
    if (part.empty() || part.size() > 6 ||
        !std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      return Status::InvalidArgument("bad skew weight '" + part + "' in '" + std::string(text) +
                                     hint);
    }
    weights.weight[c] = static_cast<uint32_t>(std::stoul(part));
  }
  return weights;
}

std::string FormatSkewWeights(const SkewWeights& weights) {
  return std::to_string(weights.weight[0]) + "," + std::to_string(weights.weight[1]) + "," +
         std::to_string(weights.weight[2]);
}

Status ValidateSpec(const PayloadSpec& spec) {
  if (spec.buffer_count == 0 || spec.buffer_count > kMaxBuffers) {
    return Status::InvalidArgument("buffer count " + std::to_string(spec.buffer_count) +
                                   " is out of range: use 1.." + std::to_string(kMaxBuffers));
  }
  for (int c = 0; c < kBufferClassCount; ++c) {
    auto buffer_class = static_cast<BufferClass>(c);
    ClassRange range = RangeOf(buffer_class);
    uint64_t bytes = spec.class_bytes[c];
    if (bytes < range.min_bytes || bytes > range.max_bytes) {
      return Status::InvalidArgument(std::string(BufferClassName(buffer_class)) + " buffer size " +
                                     std::to_string(bytes) + " bytes is outside the class: use " +
                                     std::to_string(range.min_bytes) + ".." +
                                     std::to_string(range.max_bytes) + " bytes");
    }
  }
  for (size_t i = 0; i < spec.classes.size(); ++i) {
    for (size_t j = i + 1; j < spec.classes.size(); ++j) {
      if (spec.classes[i] == spec.classes[j]) {
        return Status::InvalidArgument(
            "buffer class " + std::string(BufferClassName(spec.classes[i])) + " is listed twice");
      }
    }
  }
  switch (spec.scheme) {
    case Scheme::kUniform:
      if (spec.classes.empty()) {
        return Status::InvalidArgument("the uniform scheme needs at least one buffer class");
      }
      break;
    case Scheme::kRandom:
      if (spec.classes.size() < 2) {
        return Status::InvalidArgument("the random scheme needs at least two buffer classes, got " +
                                       std::to_string(spec.classes.size()) + " (" +
                                       FormatClasses(spec.classes) +
                                       "): pass --classes S,M or more, or use --scheme uniform");
      }
      break;
    case Scheme::kSkew: {
      uint64_t total = 0;
      for (uint32_t w : spec.skew.weight) total += w;
      if (total == 0) {
        return Status::InvalidArgument(
            "skew weights are all zero: give at least one class a weight");
      }
      break;
    }
  }
  return Status::Ok();
}

Result<PayloadLayout> PlanPayload(const PayloadSpec& spec) {
  ARTUNE_RETURN_IF_ERROR(ValidateSpec(spec));
  SplitMix64 rng(spec.seed ^ kLayoutStream);
  PayloadLayout layout;
  const uint32_t n = spec.buffer_count;
  switch (spec.scheme) {
    case Scheme::kUniform:
      for (uint32_t i = 0; i < n; ++i)
        layout.classes.push_back(spec.classes[i % spec.classes.size()]);
      break;
    case Scheme::kRandom: {
      const size_t k = spec.classes.size();
      for (uint32_t i = 0; i < n; ++i) {
        layout.classes.push_back(i < k && n >= k ? spec.classes[i] : spec.classes[rng.Below(k)]);
      }
      Shuffle(layout.classes, rng);
      break;
    }
    case Scheme::kSkew: {
      auto shares = Apportion(n, spec.skew);
      for (int c = kBufferClassCount - 1; c >= 0; --c) {
        layout.classes.insert(layout.classes.end(), shares[c], static_cast<BufferClass>(c));
      }
      Shuffle(layout.classes, rng);
      break;
    }
  }
  for (BufferClass c : layout.classes) {
    uint64_t bytes = spec.class_bytes[static_cast<int>(c)];
    if (spec.size_mode == SizeMode::kRandomInClass) {
      ClassRange range = RangeOf(c);
      bytes = range.min_bytes + rng.Below(range.max_bytes - range.min_bytes + 1);
    }
    layout.sizes.push_back(bytes);
    layout.total_bytes += bytes;
  }
  return layout;
}

std::array<uint32_t, kBufferClassCount> CountByClass(const PayloadLayout& layout) {
  std::array<uint32_t, kBufferClassCount> counts{};
  for (BufferClass c : layout.classes) ++counts[static_cast<int>(c)];
  return counts;
}

void FillDeterministic(std::span<std::byte> out, uint64_t seed, uint64_t buffer_index) {
  SplitMix64 rng(ContentSeed(seed, buffer_index));
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    uint64_t word = rng.Next();
    std::memcpy(out.data() + i, &word, 8);
  }
  if (i < out.size()) {
    uint64_t word = rng.Next();
    std::memcpy(out.data() + i, &word, out.size() - i);
  }
}

namespace {

// Fills payload.storage_ from payload.layout_ and computes the checksums.
void FillPayload(Payload& payload, uint64_t seed, std::vector<uint64_t>& offsets,
                 std::vector<std::byte>& storage, std::vector<uint64_t>& checksums,
                 uint64_t& stream_checksum) {
  storage.resize(payload.layout().total_bytes);
  uint64_t offset = 0;
  std::vector<ByteSpan> slices;
  for (size_t i = 0; i < payload.layout().sizes.size(); ++i) {
    uint64_t size = payload.layout().sizes[i];
    std::span<std::byte> out(storage.data() + offset, size);
    FillDeterministic(out, seed, i);
    offsets.push_back(offset);
    checksums.push_back(Checksum(out));
    slices.push_back(out);
    offset += size;
  }
  stream_checksum = StreamChecksum(slices);
}

}  // namespace

Result<Payload> GeneratePayload(const PayloadSpec& spec) {
  Payload payload;
  ARTUNE_ASSIGN_OR_RETURN(payload.layout_, PlanPayload(spec));
  payload.spec_ = spec;
  FillPayload(payload, spec.seed, payload.offsets_, payload.storage_, payload.buffer_checksums_,
              payload.stream_checksum_);
  return payload;
}

Result<Payload> GeneratePayloadFromSizes(std::span<const uint64_t> sizes, uint64_t seed) {
  if (sizes.empty() || sizes.size() > kMaxBuffers) {
    return Status::InvalidArgument("a payload needs 1.." + std::to_string(kMaxBuffers) +
                                   " buffers, got " + std::to_string(sizes.size()));
  }
  Payload payload;
  for (uint64_t size : sizes) {
    ARTUNE_ASSIGN_OR_RETURN(BufferClass buffer_class, ClassifySize(size));
    payload.layout_.classes.push_back(buffer_class);
    payload.layout_.sizes.push_back(size);
    payload.layout_.total_bytes += size;
  }
  payload.spec_.seed = seed;
  payload.spec_.buffer_count = static_cast<uint32_t>(sizes.size());
  FillPayload(payload, seed, payload.offsets_, payload.storage_, payload.buffer_checksums_,
              payload.stream_checksum_);
  return payload;
}

}  // namespace artune::tuner
