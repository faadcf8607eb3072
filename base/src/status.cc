#include "artune/status.h"

#include <cstring>

namespace artune {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kIoError:
      return "I/O error";
    case ErrorCode::kCorruption:
      return "corruption";
    case ErrorCode::kProtocolError:
      return "protocol error";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kPermissionDenied:
      return "permission denied";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}

Status Status::FromErrno(std::string_view what, int errnum) {
  std::string message(what);
  message += ": ";
  message += std::strerror(errnum);
  return {ErrorCode::kIoError, std::move(message)};
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string text(ErrorCodeName(code_));
  text += ": ";
  text += message_;
  return text;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return {code_, std::move(message)};
}

}  // namespace artune
