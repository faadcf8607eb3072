#include "grpc_splitter.h"

#include <algorithm>
#include <cstring>

namespace artune::relay {
namespace {

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint32_t kPrefaceBytes = sizeof(kPreface) - 1;
constexpr uint8_t kTypeData = 0, kTypeHeaders = 1, kTypeRstStream = 3, kTypeSettings = 4;
constexpr uint8_t kFlagEndStream = 0x1, kFlagPadded = 0x8;

}  // namespace

GrpcSplitter::GrpcSplitter(Side side)
    : state_(side == Side::kClient ? State::kPreface : State::kFrameHeader) {}

void GrpcSplitter::Emit(uint64_t length, uint64_t message, std::vector<ByteRun>& runs) {
  if (length == 0) return;
  if (!runs.empty() && runs.back().message == message) {
    runs.back().length += length;
  } else {
    runs.push_back({length, message});
  }
}

// A whole frame header is in header_: check it and pick the payload's state.
void GrpcSplitter::StartFrame() {
  frame_left_ = (uint32_t{header_[0]} << 16) | (uint32_t{header_[1]} << 8) | header_[2];
  frame_type_ = header_[3];
  frame_flags_ = header_[4];
  frame_stream_ = ((uint32_t{header_[5]} << 24) | (uint32_t{header_[6]} << 16) |
                   (uint32_t{header_[7]} << 8) | header_[8]) &
                  0x7fffffffu;
  header_have_ = 0;
  if (first_frame_ && frame_type_ != kTypeSettings) return GoOpaque();
  first_frame_ = false;
  const bool ends_stream =
      frame_type_ == kTypeRstStream || ((frame_type_ == kTypeHeaders || frame_type_ == kTypeData) &&
                                        (frame_flags_ & kFlagEndStream));
  if (frame_type_ == kTypeData) {
    if (frame_stream_ == 0) return GoOpaque();
    if (!streams_.contains(frame_stream_) && streams_.size() >= kMaxStreams) return GoOpaque();
    padding_ = 0;
    state_ = (frame_flags_ & kFlagPadded) ? State::kPadLength : State::kData;
    if (state_ == State::kPadLength && frame_left_ == 0) return GoOpaque();
  } else {
    state_ = State::kOtherPayload;
    if (ends_stream) streams_.erase(frame_stream_);
  }
  if (frame_left_ == 0 && state_ != State::kOpaque) {
    if (frame_type_ == kTypeData && ends_stream) streams_.erase(frame_stream_);
    state_ = State::kFrameHeader;
  }
}

size_t GrpcSplitter::FeedData(const std::byte* data, size_t size, std::vector<ByteRun>& runs) {
  GrpcStream& stream = streams_[frame_stream_];
  size_t used = 0;
  while (used < size) {
    if (stream.message_left > 0) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(stream.message_left, size - used));
      Emit(take, stream.message, runs);
      stream.message_left -= take;
      used += take;
      continue;
    }
    // The 5-byte prefix: compressed flag, 4-byte big-endian length. Literal.
    const size_t take = std::min<size_t>(5 - stream.prefix_have, size - used);
    std::memcpy(stream.prefix + stream.prefix_have, data + used, take);
    stream.prefix_have += static_cast<uint32_t>(take);
    Emit(take, 0, runs);
    used += take;
    if (stream.prefix_have == 5) {
      stream.prefix_have = 0;
      stream.message_left = (uint64_t{stream.prefix[1]} << 24) |
                            (uint64_t{stream.prefix[2]} << 16) | (uint64_t{stream.prefix[3]} << 8) |
                            stream.prefix[4];
      if (stream.message_left > 0) stream.message = next_message_++;
    }
  }
  return used;
}

void GrpcSplitter::Feed(std::span<const std::byte> bytes, std::vector<ByteRun>& runs) {
  const std::byte* data = bytes.data();
  size_t size = bytes.size();
  while (size > 0) {
    size_t used = 0;
    switch (state_) {
      case State::kOpaque:
        used = size;
        Emit(used, 0, runs);
        break;
      case State::kPreface: {
        used = std::min<size_t>(kPrefaceBytes - preface_have_, size);
        if (std::memcmp(data, kPreface + preface_have_, used) != 0) {
          GoOpaque();
          used = 0;  // the opaque state takes these bytes
          break;
        }
        Emit(used, 0, runs);
        preface_have_ += static_cast<uint32_t>(used);
        if (preface_have_ == kPrefaceBytes) state_ = State::kFrameHeader;
        break;
      }
      case State::kFrameHeader:
        used = std::min<size_t>(9 - header_have_, size);
        std::memcpy(header_ + header_have_, data, used);
        header_have_ += static_cast<uint32_t>(used);
        Emit(used, 0, runs);
        if (header_have_ == 9) StartFrame();
        break;
      case State::kPadLength:
        used = 1;
        padding_ = static_cast<uint8_t>(data[0]);
        Emit(1, 0, runs);
        --frame_left_;
        if (padding_ > frame_left_) {
          GoOpaque();
          break;
        }
        state_ = State::kData;
        break;
      case State::kData: {
        const size_t data_left = frame_left_ - padding_;
        used = FeedData(data, std::min(size, data_left), runs);
        frame_left_ -= static_cast<uint32_t>(used);
        break;
      }
      case State::kPadding:
      case State::kOtherPayload:
        used = std::min<size_t>(frame_left_, size);
        Emit(used, 0, runs);
        frame_left_ -= static_cast<uint32_t>(used);
        break;
    }
    data += used;
    size -= used;
    // The end of a frame's payload: the next frame header, or its padding first.
    if (state_ == State::kData && frame_left_ == padding_) {
      state_ = padding_ > 0 ? State::kPadding : State::kFrameHeader;
      if (padding_ == 0 && (frame_flags_ & kFlagEndStream)) streams_.erase(frame_stream_);
    } else if ((state_ == State::kPadding || state_ == State::kOtherPayload) && frame_left_ == 0) {
      if (state_ == State::kPadding && (frame_flags_ & kFlagEndStream)) {
        streams_.erase(frame_stream_);
      }
      state_ = State::kFrameHeader;
    }
  }
}

}  // namespace artune::relay
