#include "artune/probes/tensor.h"

#include "artune/probes/wire_reader.h"

namespace artune::probes {
namespace {

// RecvTensorResponse, TensorProto, TensorShapeProto field numbers (tensorflow/core/
// protobuf/worker.proto, framework/tensor.proto, framework/tensor_shape.proto).
constexpr uint32_t kResponseTensor = 1;
constexpr uint32_t kTensorDtype = 1;
constexpr uint32_t kTensorShape = 2;
constexpr uint32_t kTensorContent = 4;
constexpr uint32_t kShapeDim = 2;
constexpr uint32_t kShapeUnknownRank = 3;
constexpr uint32_t kDimSize = 1;

bool ParseShape(std::span<const uint8_t> bytes, TensorHeader& header) {
  WireReader reader(bytes);
  WireField field;
  while (!reader.done()) {
    if (!reader.ReadField(field)) return false;
    if (field.number == kShapeDim && field.type == WireType::kLengthDelimited) {
      if (header.shape.size() >= TensorHeader::kMaxDims) return false;
      int64_t size = 0;
      WireReader dim_reader(field.bytes);
      WireField dim_field;
      while (!dim_reader.done()) {
        if (!dim_reader.ReadField(dim_field)) return false;
        if (dim_field.number == kDimSize && dim_field.type == WireType::kVarint) {
          size = static_cast<int64_t>(dim_field.varint);
        }
      }
      header.shape.push_back(size);
    } else if (field.number == kShapeUnknownRank && field.type == WireType::kVarint) {
      header.unknown_rank = field.varint != 0;
    }
  }
  return true;
}

}  // namespace

const char* TensorDtypeName(int32_t dtype) {
  switch (dtype) {
    case 1:
      return "DT_FLOAT";
    case 2:
      return "DT_DOUBLE";
    case 3:
      return "DT_INT32";
    case 4:
      return "DT_UINT8";
    case 5:
      return "DT_INT16";
    case 6:
      return "DT_INT8";
    case 7:
      return "DT_STRING";
    case 8:
      return "DT_COMPLEX64";
    case 9:
      return "DT_INT64";
    case 10:
      return "DT_BOOL";
    case 14:
      return "DT_BFLOAT16";
    case 19:
      return "DT_HALF";
    default:
      return nullptr;
  }
}

std::string TensorHeader::ToString() const {
  const char* name = TensorDtypeName(dtype);
  std::string text = name != nullptr ? name : "DT_" + std::to_string(dtype);
  text += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(shape[i]);
  }
  if (unknown_rank) text += '?';
  text += ']';
  return text;
}

TensorParseResult ParseRecvTensorResponseHead(std::span<const uint8_t> message_prefix,
                                              uint64_t message_length, TensorHeader& header) {
  header = TensorHeader{};
  const bool complete = message_prefix.size() >= message_length;
  if (complete) message_prefix = message_prefix.first(static_cast<size_t>(message_length));
  WireReader reader(message_prefix);
  WireField field;
  std::span<const uint8_t> tensor_bytes;
  bool tensor_complete = false;
  bool found = false;
  while (!reader.done()) {
    if (!reader.ReadField(field, /*allow_truncated_value=*/true)) {
      return complete ? TensorParseResult::kMalformed : TensorParseResult::kNeedMore;
    }
    if (field.number == kResponseTensor && field.type == WireType::kLengthDelimited) {
      tensor_bytes = field.bytes;
      tensor_complete = field.bytes.size() == field.declared_length;
      found = true;
      break;  // tensor is field 1 and comes first; what follows is not needed
    }
  }
  if (!found) return complete ? TensorParseResult::kNoTensor : TensorParseResult::kNeedMore;

  WireReader tensor_reader(tensor_bytes);
  while (!tensor_reader.done()) {
    if (!tensor_reader.ReadField(field, /*allow_truncated_value=*/true)) {
      return tensor_complete ? TensorParseResult::kMalformed : TensorParseResult::kNeedMore;
    }
    const bool value_complete =
        field.type != WireType::kLengthDelimited || field.bytes.size() == field.declared_length;
    if (field.number == kTensorDtype && field.type == WireType::kVarint) {
      header.dtype = static_cast<int32_t>(field.varint);
    } else if (field.number == kTensorShape && field.type == WireType::kLengthDelimited) {
      if (!value_complete) return TensorParseResult::kNeedMore;
      header.shape.clear();
      if (!ParseShape(field.bytes, header)) return TensorParseResult::kMalformed;
    } else if (field.number == kTensorContent && field.type == WireType::kLengthDelimited) {
      header.content_bytes = field.declared_length;
      header.has_content = true;
      return TensorParseResult::kOk;  // its header is all we need
    } else if (!value_complete) {
      return TensorParseResult::kNeedMore;
    }
  }
  // No tensor_content (e.g. values in typed repeated fields): fine once complete.
  return tensor_complete ? TensorParseResult::kOk : TensorParseResult::kNeedMore;
}

}  // namespace artune::probes
