// HTTP/2 + gRPC stream decoder: the public class, roles and sides, and error names.
// The layers live in their own files (see decoder_impl.h); http2_decoder.h has the
// contract and probes/README.md the resynchronisation rule.
#include "artune/probes/http2_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "decoder_impl.h"

namespace artune::probes {

using namespace decode_detail;  // NOLINT: the decoder's own internal types

Http2ConnectionDecoder::Impl::~Impl() {
  for (Side& side : sides) {
    if (side.inflater != nullptr) nghttp2_hd_inflate_del(side.inflater);
  }
}

int Http2ConnectionDecoder::Impl::ClientSide() const {
  if (stats.client_side >= 0) return stats.client_side;
  // Votes count only when both directions are seen: with one direction, that
  // side "opens" every stream whichever role it has.
  if (fed[0] && fed[1] && stream_opens[0] != stream_opens[1]) {
    return stream_opens[0] > stream_opens[1] ? 0 : 1;
  }
  return 1 - server_side_hint;
}

MessageDirection Http2ConnectionDecoder::Impl::DirectionOf(int side) const {
  const int client = ClientSide();
  return side == client ? MessageDirection::kRequest : MessageDirection::kResponse;
}

void Http2ConnectionDecoder::Impl::StartSide(Side& side, FlowOrigin origin) {
  side.started = true;
  if (origin == FlowOrigin::kHandshake) {
    side.phase = Phase::kPreface;
    side.preface_matched = 0;
  } else {
    LoseHpack(side);
    EnterResync(side);
  }
}

Http2ConnectionDecoder::Http2ConnectionDecoder(uint64_t connection_id,
                                               GrpcMessageObserver& observer,
                                               DecodeErrorCounts& errors,
                                               const DecoderLimits& limits)
    : impl_(std::make_unique<Impl>(connection_id, observer, errors, limits)) {}

Http2ConnectionDecoder::~Http2ConnectionDecoder() = default;

void Http2ConnectionDecoder::SetServerSideHint(int side) { impl_->server_side_hint = side & 1; }

void Http2ConnectionDecoder::Begin(int side, FlowOrigin origin) {
  impl_->StartSide(impl_->sides[side & 1], origin);
}

void Http2ConnectionDecoder::Feed(int side, std::span<const uint8_t> bytes, uint64_t timestamp_ns) {
  Side& s = impl_->sides[side & 1];
  if (!s.started) impl_->StartSide(s, FlowOrigin::kMidStream);
  if (bytes.empty()) return;
  impl_->now_ns = timestamp_ns;
  impl_->fed[side & 1] = true;
  impl_->Feed(s, bytes.data(), bytes.size());
  impl_->ReleaseIfAnswered(impl_->sides[1 - (side & 1)]);
}

void Http2ConnectionDecoder::Gap(int side, uint64_t missing_bytes) {
  (void)missing_bytes;
  Side& s = impl_->sides[side & 1];
  // Bytes held before the gap are decoded first; the client side losing its
  // HPACK state below also frees a server side waiting for it.
  s.may_hold = false;
  impl_->Release(s);
  s.may_hold = true;
  impl_->errors.Add(DecodeError::kStreamGap);
  s.position_exact = false;
  if (!s.started) {
    impl_->StartSide(s, FlowOrigin::kMidStream);
    return;
  }
  impl_->LoseHpack(s);
  impl_->EnterResync(s);
  impl_->ReleaseIfAnswered(impl_->sides[1 - (side & 1)]);
}

void Http2ConnectionDecoder::End(int side) {
  Impl& impl = *impl_;
  Side& s = impl.sides[side & 1];
  if (!s.started) return;
  s.may_hold = false;  // what it held is decoded now, whatever the other side does
  impl.Release(s);
  s.may_hold = true;
  if (s.phase == Phase::kResync && ResyncBytes(s) > 0) {
    // A last scan over what is buffered: frames may still be complete in it.
    const long point = impl.FindResyncPoint(s, /*buffer_full=*/false);
    if (point >= 0) {
      const size_t skipped = static_cast<size_t>(point) - s.resync_scan.front;
      if (skipped > 0) {
        impl.errors.Add(DecodeError::kResyncDiscard);
        impl.stats.discarded_bytes += skipped;
      }
      std::vector<uint8_t> rest(s.resync.begin() + point, s.resync.end());
      ResetResync(s);
      s.phase = Phase::kFrameHeader;
      impl.Feed(s, rest.data(), rest.size());
    }
  }
  if ((s.phase == Phase::kFrameHeader && s.header_have > 0) || s.phase == Phase::kFramePayload ||
      (s.phase == Phase::kPreface && s.preface_matched > 0 &&
       s.preface_matched < kClientPreface.size())) {
    impl.errors.Add(DecodeError::kTruncatedFrame);
  }
  for (auto it = impl.streams.begin(); it != impl.streams.end();) {
    GrpcFramer& framer = it->second.framer[s.index];
    if (framer.synced && framer.InMessage()) impl.errors.Add(DecodeError::kTruncatedMessage);
    framer.Reset();
    it->second.ended[s.index] = true;
    // Either side ending ends the connection's calls: gRPC never half-closes TCP
    // while calls are open, and a call must not stay in flight for ever.
    impl.FinishCall(it->first, it->second, CallEndReason::kConnectionEnded);
    if (it->second.ended[0] && it->second.ended[1]) {
      it = impl.streams.erase(it);
    } else {
      ++it;
    }
  }
  if (s.phase == Phase::kResync && ResyncBytes(s) > 0) {
    // Bytes still waiting for a frame boundary when the stream ended: discarded.
    impl.errors.Add(DecodeError::kResyncDiscard);
    impl.stats.discarded_bytes += ResyncBytes(s);
  }
  s.phase = Phase::kFrameHeader;
  s.header_have = 0;
  ResetResync(s);
  s.started = false;
  impl.ReleaseIfAnswered(impl.sides[1 - (side & 1)]);  // no request will follow now
}

const ConnectionDecodeStats& Http2ConnectionDecoder::stats() const { return impl_->stats; }

int Http2ConnectionDecoder::client_side() const { return impl_->ClientSide(); }

const char* DecodeErrorName(DecodeError error) {
  switch (error) {
    case DecodeError::kNotHttp2:
      return "not_http2";
    case DecodeError::kInvalidFrameHeader:
      return "invalid_frame_header";
    case DecodeError::kBadPadding:
      return "bad_padding";
    case DecodeError::kHpackError:
      return "hpack_error";
    case DecodeError::kContinuationMismatch:
      return "continuation_mismatch";
    case DecodeError::kPushPromiseUnsupported:
      return "push_promise_unsupported";
    case DecodeError::kResyncDiscard:
      return "resync_discard";
    case DecodeError::kStreamGap:
      return "stream_gap";
    case DecodeError::kStreamJoinedMidway:
      return "stream_joined_midway";
    case DecodeError::kGrpcBadFlag:
      return "grpc_bad_flag";
    case DecodeError::kTruncatedFrame:
      return "truncated_frame";
    case DecodeError::kTruncatedMessage:
      return "truncated_message";
    case DecodeError::kTooManyStreams:
      return "too_many_streams";
    case DecodeError::kTensorParseError:
      return "tensor_parse_error";
    case DecodeError::kCount:
      break;
  }
  return "unknown_error";
}

uint64_t DecodeErrorCounts::Total() const {
  uint64_t total = 0;
  for (uint64_t count : counts) total += count;
  return total;
}

const char* MessageDirectionName(MessageDirection direction) {
  return direction == MessageDirection::kRequest ? "request" : "response";
}

}  // namespace artune::probes
