//===- Status.h - Errors as values for the runtime ---------------*- C++ -*-===//
//
// Status (success or a one-line message) and Expected<T> (a value or a message). The runtime
// reports every failure by returning one of these; only main() turns them into exit codes.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_STATUS_H
#define XFRT_STATUS_H

#include <optional>
#include <string>
#include <utility>

namespace xfrt {

class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  static Status failure(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return message_; }

private:
  bool failed_ = false;
  std::string message_;
};

template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Status error) : message_(error.message()) {
    if (message_.empty())
      message_ = "unknown error";
  }
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return message_; }
  Status status() const { return ok() ? Status::success() : Status::failure(message_); }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  T take() { return std::move(*value_); }

private:
  std::optional<T> value_;
  std::string message_;
};

inline Status makeError(std::string message) { return Status::failure(std::move(message)); }

} // namespace xfrt

#endif // XFRT_STATUS_H
