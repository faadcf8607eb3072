// The few pieces of the protobuf wire format the built-in TensorFlow workload
// (tf_servers.cc, tf_workers.cc) writes and reads by hand: TensorFlow's gRPC tensor coding
// builds RecvTensorResponse bytes itself so that the tensor can travel as its own
// zero-copy slice, and this workload does the same. Private to the tuner library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace artune::tuner::wire {

enum WireType : uint32_t { kVarint = 0, kLengthDelimited = 2 };

inline void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}
inline void AppendTag(std::string& out, uint32_t field, WireType type) {
  AppendVarint(out, (uint64_t{field} << 3) | type);
}
inline void AppendBytesField(std::string& out, uint32_t field, std::string_view bytes) {
  AppendTag(out, field, kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

// A cursor over protobuf bytes. Every read checks bounds; a malformed message makes
// Next() return false with `error` set.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : rest_(bytes) {}
  bool Next() {
    if (rest_.empty()) return false;
    uint64_t tag = 0;
    if (!ReadVarint(tag)) return Fail("truncated tag");
    field_ = static_cast<uint32_t>(tag >> 3);
    const uint32_t type = tag & 7;
    if (type == kVarint) {
      bytes_ = {};
      return ReadVarint(value_) || Fail("truncated varint");
    }
    if (type != kLengthDelimited) return Fail("unexpected wire type " + std::to_string(type));
    uint64_t length = 0;
    if (!ReadVarint(length) || length > rest_.size()) return Fail("truncated field");
    bytes_ = rest_.substr(0, length);
    rest_.remove_prefix(length);
    return true;
  }
  uint32_t field() const { return field_; }
  uint64_t value() const { return value_; }
  std::string_view bytes() const { return bytes_; }
  const std::string& error() const { return error_; }

 private:
  bool ReadVarint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const auto byte = static_cast<uint8_t>(rest_.front());
      rest_.remove_prefix(1);
      out |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  std::string_view rest_;
  uint32_t field_ = 0;
  uint64_t value_ = 0;
  std::string_view bytes_;
  std::string error_;
};

}  // namespace artune::tuner::wire
