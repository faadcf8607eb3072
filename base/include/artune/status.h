// The one error type of the project: returned, never thrown.
//
// Every fallible function returns Status or Result<T>. An error is described once,
// where it is first detected, with enough context for a user to act on it (what
// failed, the value involved, what to do). Callers that only pass an error up add
// context with WithContext() instead of logging it again. Exceptions are used only
// at the top of main().
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace artune {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,    // bad input from the user or caller: fix the input
  kNotFound,           // a named thing does not exist
  kAlreadyExists,      // a named thing exists already
  kIoError,            // a system call failed (errno text in the message)
  kCorruption,         // data failed validation: checksum, framing, database content
  kProtocolError,      // the peer broke the wire protocol: the connection is dropped
  kTimeout,            // a deadline passed: retry, or raise timeout_ms
  kUnavailable,        // the peer or device is gone or unreachable: reconnect
  kResourceExhausted,  // a bounded resource ran out: buffers, credits, memory
  kPermissionDenied,   // missing capability (root, CAP_BPF, CAP_NET_RAW)
  kUnsupported,        // the requested feature is absent on this host or build
  kCancelled,          // the operation was cancelled by shutdown or the user
  kInternal,           // a bug in artune: please report it
};

std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) {
    return {ErrorCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
  static Status IoError(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
  // IoError with strerror(errnum) appended: "what: strerror".
  static Status FromErrno(std::string_view what, int errnum);
  static Status Corruption(std::string m) { return {ErrorCode::kCorruption, std::move(m)}; }
  static Status ProtocolError(std::string m) { return {ErrorCode::kProtocolError, std::move(m)}; }
  static Status Timeout(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }
  static Status Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {ErrorCode::kResourceExhausted, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {ErrorCode::kPermissionDenied, std::move(m)};
  }
  static Status Unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
  static Status Cancelled(std::string m) { return {ErrorCode::kCancelled, std::move(m)}; }
  static Status Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code: message", or "ok".
  std::string ToString() const;
  // Prefixes the message ("context: message"); an ok status stays ok.
  Status WithContext(std::string_view context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).ok() && "Result needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace artune

#define ARTUNE_CONCAT_INNER(a, b) a##b
#define ARTUNE_CONCAT(a, b) ARTUNE_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function if it is an error.
#define ARTUNE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::artune::Status artune_status_ = (expr);        \
    if (!artune_status_.ok()) return artune_status_; \
  } while (false)

// Evaluates a Result-returning `expr`; on error returns its status, else moves the
// value into `lhs` (which may be a declaration: `auto x`).
#define ARTUNE_ASSIGN_OR_RETURN(lhs, expr) \
  ARTUNE_ASSIGN_OR_RETURN_IMPL(ARTUNE_CONCAT(artune_result_, __LINE__), lhs, expr)
#define ARTUNE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
