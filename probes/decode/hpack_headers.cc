// Header blocks (HEADERS + CONTINUATION) through nghttp2's HPACK inflater, one per
// direction; a stream's :path is its method, :path and :status say who the client is.
#include "decoder_impl.h"

#include <nghttp2/nghttp2.h>

namespace artune::probes {

using namespace decode_detail;  // NOLINT: the decoder's own internal types

void Http2ConnectionDecoder::Impl::LoseHpack(Side& side) {
  if (side.hpack_ok) {
    side.hpack_ok = false;
    stats.joined_midway = true;
  }
  side.header_block_open = false;
}

void Http2ConnectionDecoder::Impl::OnHeaderField(Side& side, std::string_view name,
                                                 std::string_view value) {
  if (name == ":path") {
    stats.client_side = side.index;
    // The stream was created (or refused, when too many) by its HEADERS frame.
    auto it = streams.find(side.header_block_stream);
    if (it != streams.end()) {
      it->second.method.assign(value);
      it->second.is_recv_tensor = value == kRecvTensorMethod;
    }
  } else if (name == ":status") {
    stats.client_side = 1 - side.index;
  }
}

void Http2ConnectionDecoder::Impl::FeedHeaderBlock(Side& side, const uint8_t* data, size_t size,
                                                   bool final) {
  if (!side.hpack_ok || side.header_block_failed) return;
  if (side.inflater == nullptr && nghttp2_hd_inflate_new(&side.inflater) != 0) {
    side.inflater = nullptr;
    LoseHpack(side);
    return;
  }
  // nghttp2 takes a non-const pointer but does not write through it.
  uint8_t* input = const_cast<uint8_t*>(data);
  size_t left = size;
  for (;;) {
    nghttp2_nv field;
    int flags = 0;
    const ssize_t used =
        nghttp2_hd_inflate_hd2(side.inflater, &field, &flags, input, left, final ? 1 : 0);
    if (used < 0) {
      errors.Add(DecodeError::kHpackError);
      side.header_block_failed = true;
      LoseHpack(side);
      return;
    }
    input += used;
    left -= static_cast<size_t>(used);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      OnHeaderField(side, {reinterpret_cast<const char*>(field.name), field.namelen},
                    {reinterpret_cast<const char*>(field.value), field.valuelen});
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(side.inflater);
      return;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return;
  }
}

}  // namespace artune::probes
