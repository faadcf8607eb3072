// A protobuf wire-format reader over a byte span: varints, fixed fields and
// length-delimited fields, returning sub-spans instead of copies. Enough to read a
// few known fields of a message without generated code or a parse of the payload.
//
// Every read is bounds-checked; a malformed or truncated input makes the read
// return false and leaves the reader unchanged. No allocation.
#pragma once

#include <cstdint>
#include <span>

namespace artune::probes {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

struct WireField {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t varint = 0;  // kVarint, kFixed64, kFixed32: the value
  // kLengthDelimited: the declared length, and the bytes of it that are inside the
  // input (shorter than `declared_length` when the input is a prefix of the message).
  uint64_t declared_length = 0;
  std::span<const uint8_t> bytes;
};

class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> input) : input_(input) {}

  bool done() const { return position_ >= input_.size(); }
  size_t position() const { return position_; }

  // Reads one varint; false when truncated or longer than 10 bytes.
  bool ReadVarint(uint64_t& value);

  // Reads the next field. With `allow_truncated_value`, a length-delimited field
  // whose value runs past the end of the input is returned with the bytes present
  // (for reading the head of a message that is still arriving); the reader then
  // stands at the end. Groups are not supported (false): no message read here uses
  // them.
  bool ReadField(WireField& field, bool allow_truncated_value = false);

 private:
  std::span<const uint8_t> input_;
  size_t position_ = 0;
};

}  // namespace artune::probes
