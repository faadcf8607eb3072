// HTTP/2 frame header layout and checks (RFC 9113 section 4.1), shared by the
// decoder and its tests. Internal to probes/decode.
#pragma once

#include <cstddef>
#include <cstdint>

namespace artune::probes {

inline constexpr size_t kFrameHeaderSize = 9;

enum FrameType : uint8_t {
  kFrameData = 0,
  kFrameHeaders = 1,
  kFramePriority = 2,
  kFrameRstStream = 3,
  kFrameSettings = 4,
  kFramePushPromise = 5,
  kFramePing = 6,
  kFrameGoaway = 7,
  kFrameWindowUpdate = 8,
  kFrameContinuation = 9,
};

enum FrameFlag : uint8_t {
  kFlagEndStream = 0x1,  // DATA, HEADERS (ACK on SETTINGS and PING)
  kFlagEndHeaders = 0x4,
  kFlagPadded = 0x8,
  kFlagPriority = 0x20,
};

struct FrameHeader {
  uint32_t length = 0;
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream_id = 0;
  bool reserved_bit = false;
};

inline uint32_t ReadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

inline FrameHeader ParseFrameHeader(const uint8_t* p) {
  FrameHeader header;
  header.length = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
  header.type = p[3];
  header.flags = p[4];
  const uint32_t id = ReadBigEndian32(p + 5);
  header.reserved_bit = (id & 0x80000000u) != 0;
  header.stream_id = id & 0x7fffffffu;
  return header;
}

// What the protocol allows: fixed lengths and stream-id rules per type. A header
// failing this is a connection error in HTTP/2; the decoder resynchronises.
bool FrameHeaderIsValid(const FrameHeader& header);

// Stricter, for finding frame boundaries in unknown bytes: a known type, only the
// flags that type defines, reserved bit clear, length at most `max_length`.
// Implies FrameHeaderIsValid.
bool FrameHeaderIsPlausible(const FrameHeader& header, uint32_t max_length);

}  // namespace artune::probes
