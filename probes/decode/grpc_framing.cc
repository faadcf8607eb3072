// Streams and the gRPC message framing inside DATA (flag byte + 4-byte length),
// across frames; RecvTensor response heads are kept and parsed here.
#include "decoder_impl.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace artune::probes {

using namespace decode_detail;  // NOLINT: the decoder's own internal types

StreamState* Http2ConnectionDecoder::Impl::FindOrCreateStream(uint32_t stream_id) {
  auto it = streams.find(stream_id);
  if (it != streams.end()) return &it->second;
  if (streams.size() >= limits.max_open_streams) {
    errors.Add(DecodeError::kTooManyStreams);
    return nullptr;
  }
  return &streams[stream_id];
}

void Http2ConnectionDecoder::Impl::MaybeRetireStream(uint32_t stream_id,
                                                     const StreamState& stream) {
  if (stream.ended[0] && stream.ended[1]) streams.erase(stream_id);
}

void Http2ConnectionDecoder::Impl::EmitMessage(Side& side, uint32_t stream_id, StreamState& stream,
                                               GrpcFramer& framer) {
  GrpcMessage message;
  message.connection_id = connection_id;
  message.stream_id = stream_id;
  message.direction = DirectionOf(side.index);
  message.method_known = !stream.method.empty();
  message.method = message.method_known ? std::string_view(stream.method) : kUnknownMethod;
  message.compressed = framer.compressed;
  message.length = framer.length;
  message.timestamp_ns = now_ns;
  TensorHeader tensor;
  if (stream.is_recv_tensor && message.direction == MessageDirection::kResponse &&
      !framer.compressed) {
    const TensorParseResult result =
        ParseRecvTensorResponseHead(framer.head, framer.length, tensor);
    if (result == TensorParseResult::kOk) {
      message.tensor = &tensor;
    } else if (result != TensorParseResult::kNoTensor) {
      errors.Add(DecodeError::kTensorParseError);
    }
  }
  if (message.direction == MessageDirection::kRequest && !stream.call_open && !stream.call_done) {
    stream.call_open = true;
    message.call_start = true;
  }
  ++stats.messages;
  observer.OnGrpcMessage(message);
  framer.Reset();
  // The response side already ended (a server answering before reading the
  // request, or a syscall backend reporting the request late): the call was in
  // flight for this message only.
  if (message.call_start && stream.ended[1 - side.index]) {
    FinishCall(stream_id, stream, CallEndReason::kResponseEnded);
  }
}

void Http2ConnectionDecoder::Impl::FinishCall(uint32_t stream_id, StreamState& stream,
                                              CallEndReason reason) {
  if (!stream.call_open) return;
  stream.call_open = false;
  stream.call_done = true;
  CallEnd end;
  end.connection_id = connection_id;
  end.stream_id = stream_id;
  end.reason = reason;
  end.timestamp_ns = reason == CallEndReason::kConnectionEnded ? 0 : now_ns;
  observer.OnCallEnd(end);
}

void Http2ConnectionDecoder::Impl::FeedGrpc(Side& side, uint32_t stream_id, StreamState* stream,
                                            const uint8_t* data, size_t size) {
  if (stream == nullptr || !stream->framer[side.index].synced) {
    stats.unattributed_data_bytes += size;
    return;
  }
  GrpcFramer& framer = stream->framer[side.index];
  while (size > 0) {
    if (framer.header_have < 5) {
      const size_t take = std::min<size_t>(5 - framer.header_have, size);
      std::memcpy(framer.header + framer.header_have, data, take);
      framer.header_have = static_cast<uint8_t>(framer.header_have + take);
      data += take;
      size -= take;
      if (framer.header_have < 5) return;
      if (framer.header[0] > 1) {
        errors.Add(DecodeError::kGrpcBadFlag);
        framer.Reset();
        framer.synced = false;
        stats.unattributed_data_bytes += size;
        return;
      }
      framer.compressed = framer.header[0] == 1;
      framer.length = ReadBigEndian32(framer.header + 1);
      framer.remaining = framer.length;
      if (framer.remaining == 0) {
        EmitMessage(side, stream_id, *stream, framer);
      }
      continue;
    }
    const size_t take = std::min<size_t>(framer.remaining, size);
    if (stream->is_recv_tensor && framer.head.size() < limits.tensor_head_bytes) {
      const size_t keep = std::min(take, limits.tensor_head_bytes - framer.head.size());
      framer.head.insert(framer.head.end(), data, data + keep);
    }
    framer.remaining -= static_cast<uint32_t>(take);
    data += take;
    size -= take;
    if (framer.remaining == 0) EmitMessage(side, stream_id, *stream, framer);
  }
}

void Http2ConnectionDecoder::Impl::EndStreamSide(Side& side, uint32_t stream_id) {
  auto it = streams.find(stream_id);
  if (it == streams.end()) return;
  StreamState& stream = it->second;
  GrpcFramer& framer = stream.framer[side.index];
  if (framer.synced && framer.InMessage()) errors.Add(DecodeError::kTruncatedMessage);
  framer.Reset();
  stream.ended[side.index] = true;
  if (DirectionOf(side.index) == MessageDirection::kResponse) {
    FinishCall(stream_id, stream, CallEndReason::kResponseEnded);
  }
  MaybeRetireStream(stream_id, stream);
}

}  // namespace artune::probes
