// TensorFlow tensor RPCs read straight from the gRPC message bytes.
//
// `/tensorflow.WorkerService/RecvTensor` responses carry the tensor the worker
// pulls: RecvTensorResponse.tensor (field 1) is a TensorProto with dtype (1),
// tensor_shape (2: TensorShapeProto, dim = 2, Dim.size = 1) and tensor_content (4).
// The parse reads only the head of the message: tensor_content's length comes from
// its field header, its bytes are never touched or copied.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace artune::probes {

inline constexpr std::string_view kRecvTensorMethod = "/tensorflow.WorkerService/RecvTensor";

struct TensorHeader {
  static constexpr size_t kMaxDims = 32;

  int32_t dtype = 0;  // tensorflow.DataType enum value (1 = DT_FLOAT, ...)
  std::vector<int64_t> shape;
  bool unknown_rank = false;
  uint64_t content_bytes = 0;  // declared length of tensor_content (0 if absent)
  bool has_content = false;

  // "DT_FLOAT[2,3]"; unknown dtypes as "DT_17".
  std::string ToString() const;
};

const char* TensorDtypeName(int32_t dtype);

enum class TensorParseResult : uint8_t {
  kOk,         // dtype, shape and the tensor_content header were all read
  kNeedMore,   // the prefix ends before tensor_content's header: give more bytes
  kNoTensor,   // a complete message without a `tensor` field (e.g. is_dead)
  kMalformed,  // not a RecvTensorResponse
};

// Parses the head of a RecvTensorResponse. `message_prefix` holds the first bytes
// of the gRPC message payload (after the 5-byte gRPC header); `message_length` is
// the full payload length from that header. Reads at most what is given.
TensorParseResult ParseRecvTensorResponseHead(std::span<const uint8_t> message_prefix,
                                              uint64_t message_length, TensorHeader& header);

}  // namespace artune::probes
