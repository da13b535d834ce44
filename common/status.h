// Status: the one error type of flexcsi. It carries a gRPC/CSI status code and a human message,
// travels by value, and is turned into a FlexVolume Failure reply or a gRPC status at the edges.
// Nothing in flexcsi throws across a thread or process boundary; errors travel as Status.
#pragma once

#include <string>
#include <utility>

namespace flexcsi {

// Numerically identical to grpc::StatusCode, so conversion is a cast; kept here so that code
// which must not link gRPC (flexexec) can still speak in the same codes.
enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

const char* CodeName(Code code);

// strerror(errno): what the last failed system call said, for an error's message.
std::string ErrnoText();

class Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NOT_FOUND: volume vol-1 does not exist", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with context: "staging vol-1: <message>".
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
inline Status AlreadyExists(std::string m) { return Status(Code::kAlreadyExists, std::move(m)); }
inline Status FailedPrecondition(std::string m) {
  return Status(Code::kFailedPrecondition, std::move(m));
}
inline Status OutOfRange(std::string m) { return Status(Code::kOutOfRange, std::move(m)); }
inline Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }
inline Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
inline Status DeadlineExceeded(std::string m) {
  return Status(Code::kDeadlineExceeded, std::move(m));
}
inline Status Aborted(std::string m) { return Status(Code::kAborted, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(Code::kUnimplemented, std::move(m)); }
inline Status ResourceExhausted(std::string m) {
  return Status(Code::kResourceExhausted, std::move(m));
}
inline Status PermissionDenied(std::string m) {
  return Status(Code::kPermissionDenied, std::move(m));
}

// StatusOr<T>: a value or the Status explaining why there is none.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}           // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}   // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok()
  const T& value() const& { return value_; }
  T& value() & { return value_; }
  T&& value() && { return std::move(value_); }
  const T& operator*() const& { return value_; }
  T& operator*() & { return value_; }
  T&& operator*() && { return std::move(value_); }
  const T* operator->() const { return &value_; }
  T* operator->() { return &value_; }

 private:
  Status status_;
  T value_{};
};

}  // namespace flexcsi

// Returns from the enclosing function when expr yields a non-OK Status.
#define FLEXCSI_RETURN_IF_ERROR(expr)        \
  do {                                       \
    ::flexcsi::Status flexcsi_status_ = (expr); \
    if (!flexcsi_status_.ok()) return flexcsi_status_; \
  } while (0)
