#include "artune/probes/wire_reader.h"

namespace artune::probes {

bool WireReader::ReadVarint(uint64_t& value) {
  uint64_t result = 0;
  size_t position = position_;
  for (int shift = 0; shift < 64; shift += 7) {
    if (position >= input_.size()) return false;
    const uint8_t byte = input_[position++];
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      value = result;
      position_ = position;
      return true;
    }
  }
  return false;  // more than 10 bytes: not a varint
}

bool WireReader::ReadField(WireField& field, bool allow_truncated_value) {
  const size_t start = position_;
  uint64_t tag = 0;
  if (!ReadVarint(tag)) return false;
  const uint64_t number = tag >> 3;
  if (number == 0 || number > 0x1fffffff) {
    position_ = start;
    return false;
  }
  field.number = static_cast<uint32_t>(number);
  field.type = static_cast<WireType>(tag & 7);
  field.bytes = {};
  field.declared_length = 0;
  switch (field.type) {
    case WireType::kVarint:
      if (!ReadVarint(field.varint)) break;
      return true;
    case WireType::kFixed64:
    case WireType::kFixed32: {
      const size_t width = field.type == WireType::kFixed64 ? 8 : 4;
      if (input_.size() - position_ < width) break;
      uint64_t value = 0;
      for (size_t i = 0; i < width; ++i) {
        value |= static_cast<uint64_t>(input_[position_ + i]) << (8 * i);
      }
      field.varint = value;
      position_ += width;
      return true;
    }
    case WireType::kLengthDelimited: {
      uint64_t length = 0;
      if (!ReadVarint(length)) break;
      const size_t available = input_.size() - position_;
      if (length > available) {
        if (!allow_truncated_value) break;
        field.declared_length = length;
        field.bytes = input_.subspan(position_, available);
        position_ = input_.size();
        return true;
      }
      field.declared_length = length;
      field.bytes = input_.subspan(position_, static_cast<size_t>(length));
      position_ += static_cast<size_t>(length);
      return true;
    }
    default:
      break;
  }
  position_ = start;
  return false;
}

}  // namespace artune::probes
