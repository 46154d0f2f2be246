// Status and Result<T>: how tern reports recoverable errors.
//
// Contract: loaders, parsers and request handling return a Status or a
// Result<T> carrying a message with context ("loading layer 3 q_proj: shape
// [4096, 2048], expected [4096, 4096]"). Nothing a user sends or a file
// contains may abort the process; hot kernels assert instead.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace tern {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    return s;
  }
  template <typename... Args>
  static Status Errorf(fmt::format_string<Args...> f, Args&&... args) {
    return Error(fmt::format(f, std::forward<Args>(args)...));
  }

  bool ok() const { return !message_.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }
  // Prefixes the message: "context: message". No-op on OK.
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return Error(fmt::format("{}: {}", context, *message_));
  }

 private:
  std::optional<std::string> message_;
};

// Either a value or an error Status (never an OK status).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {             // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tern

// Returns the error of a Status-valued expression from the enclosing function.
#define TERN_RETURN_IF_ERROR(expr)            \
  do {                                        \
    ::tern::Status tern_status_ = (expr);     \
    if (!tern_status_.ok()) return tern_status_; \
  } while (0)

#define TERN_CONCAT_INNER(a, b) a##b
#define TERN_CONCAT(a, b) TERN_CONCAT_INNER(a, b)

// TERN_ASSIGN_OR_RETURN(auto x, MakeX()); declares x or returns the error.
#define TERN_ASSIGN_OR_RETURN(decl, expr) \
  TERN_ASSIGN_OR_RETURN_IMPL(TERN_CONCAT(tern_result_, __LINE__), decl, expr)
#define TERN_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  decl = std::move(tmp).value()
