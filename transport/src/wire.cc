// Names and the transition table of wire.h.
#include "wire.h"

namespace artune::transport::wire {

std::string_view PacketKindName(PacketKind kind) {
  switch (kind) {
    case PacketKind::kEager:
      return "eager";
    case PacketKind::kCoalescedEager:
      return "coalesced-eager";
    case PacketKind::kAnnounce:
      return "announce";
    case PacketKind::kFin:
      return "fin";
    case PacketKind::kError:
      return "error";
    case PacketKind::kCredit:
      return "credit";
  }
  return "unknown";
}

std::string_view FrameKindName(FrameKind kind) {
  switch (kind) {
    case FrameKind::kHello:
      return "hello";
    case FrameKind::kSend:
      return "send";
    case FrameKind::kReadRequest:
      return "read-request";
    case FrameKind::kReadResponse:
      return "read-response";
  }
  return "unknown";
}

std::string_view CallStateName(CallState state) {
  switch (state) {
    case CallState::kReceivingRequest:
      return "receiving-request";
    case CallState::kHandling:
      return "handling";
    case CallState::kSending:
      return "sending";
    case CallState::kAwaitingResponse:
      return "awaiting-response";
    case CallState::kReceivingResponse:
      return "receiving-response";
    case CallState::kAwaitingFin:
      return "awaiting-fin";
    case CallState::kAbandoned:
      return "abandoned";
    case CallState::kFailed:
      return "failed";
    case CallState::kDone:
      return "done";
  }
  return "unknown";
}

bool IsAllowedTransition(CallState from, CallState to) {
  using S = CallState;
  if (from == S::kDone) return false;
  if (to == S::kFailed) return from != S::kFailed;
  if (to == S::kDone) return true;  // every live state may finish (checked by the caller)
  switch (from) {
    case S::kReceivingRequest:
      return to == S::kHandling;
    case S::kHandling:
      return to == S::kSending;
    case S::kSending:
      return to == S::kAwaitingResponse || to == S::kAwaitingFin || to == S::kAbandoned;
    case S::kAwaitingResponse:
      return to == S::kReceivingResponse || to == S::kAbandoned;
    case S::kReceivingResponse:
      return to == S::kAbandoned;
    case S::kAwaitingFin:
    case S::kAbandoned:
    case S::kFailed:
    case S::kDone:
      return false;
  }
  return false;
}

}  // namespace artune::transport::wire
