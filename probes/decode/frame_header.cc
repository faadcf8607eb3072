#include "frame_header.h"

namespace artune::probes {

bool FrameHeaderIsValid(const FrameHeader& header) {
  const bool on_stream = header.stream_id != 0;
  switch (header.type) {
    case kFrameData:
    case kFrameHeaders:
    case kFrameContinuation:
    case kFramePushPromise:
      return on_stream;
    case kFramePriority:
      return on_stream && header.length == 5;
    case kFrameRstStream:
      return on_stream && header.length == 4;
    case kFrameSettings:
      if (on_stream) return false;
      return (header.flags & kFlagEndStream) != 0 ? header.length == 0 : header.length % 6 == 0;
    case kFramePing:
      return !on_stream && header.length == 8;
    case kFrameGoaway:
      return !on_stream && header.length >= 8;
    case kFrameWindowUpdate:
      return header.length == 4;
    default:
      return true;  // unknown types are ignored by the protocol
  }
}

bool FrameHeaderIsPlausible(const FrameHeader& header, uint32_t max_length) {
  if (header.reserved_bit || header.length > max_length) return false;
  uint8_t allowed_flags = 0;
  switch (header.type) {
    case kFrameData:
      allowed_flags = kFlagEndStream | kFlagPadded;
      break;
    case kFrameHeaders:
      allowed_flags = kFlagEndStream | kFlagEndHeaders | kFlagPadded | kFlagPriority;
      break;
    case kFrameSettings:
    case kFramePing:
      allowed_flags = kFlagEndStream;
      break;  // ACK
    case kFramePushPromise:
      allowed_flags = kFlagEndHeaders | kFlagPadded;
      break;
    case kFrameContinuation:
      allowed_flags = kFlagEndHeaders;
      break;
    case kFramePriority:
    case kFrameRstStream:
    case kFrameGoaway:
    case kFrameWindowUpdate:
      allowed_flags = 0;
      break;
    default:
      return false;
  }
  if ((header.flags & ~allowed_flags) != 0) return false;
  return FrameHeaderIsValid(header);
}

}  // namespace artune::probes
