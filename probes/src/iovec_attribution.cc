#include "iovec_attribution.h"

namespace artune::probes {

void IovecAttribution::AddSend(std::span<const uint32_t> iovec_lengths, uint64_t transferred) {
  for (uint32_t length : iovec_lengths) {
    if (transferred == 0) break;  // not sent by this call
    if (iovecs_.size() >= kMaxPending) {
      decided_(-1, iovecs_.front().length);
      iovecs_.pop_front();
    }
    iovecs_.push_back({send_cursor_, length});
    const uint64_t taken = length < transferred ? length : transferred;
    send_cursor_ += taken;
    transferred -= taken;
  }
  Match();
}

void IovecAttribution::AddFrame(uint64_t begin, uint64_t end, int method_index) {
  if (iovecs_.empty() && end <= send_cursor_) return;
  if (frames_.size() >= kMaxPending) frames_.pop_front();
  frames_.push_back({begin, end, method_index});
  Match();
}

void IovecAttribution::Flush() {
  for (const PendingIovec& iovec : iovecs_) decided_(-1, iovec.length);
  iovecs_.clear();
  frames_.clear();
}

void IovecAttribution::Match() {
  while (!iovecs_.empty()) {
    const PendingIovec& iovec = iovecs_.front();
    while (!frames_.empty() && frames_.front().end <= iovec.begin) frames_.pop_front();
    if (frames_.empty()) return;  // its frame has not been decoded yet
    const Frame& frame = frames_.front();
    // A frame starting past the iovec: its first byte was in no frame (skipped).
    decided_(frame.begin <= iovec.begin ? frame.method_index : -1, iovec.length);
    iovecs_.pop_front();
  }
}

}  // namespace artune::probes
