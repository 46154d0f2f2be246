// ApiError and ApiResult<T>: how the protocol layer reports a request it
// rejects, carrying the HTTP status, the error `type` and the exact message
// SGLang sends for the same input.
//
// SGLang's OpenAI routes answer errors with a flat body (ErrorResponse in
// python/sglang/srt/entrypoints/openai/protocol.py):
//   {"object":"error","message":...,"type":...,"param":null,"code":<status>}
// The `type` tells where SGLang raised the error:
//   "Bad Request"         400  pydantic/FastAPI request validation (the field
//                              types; message lists the field errors)
//   "BadRequestError"     400  serving-layer checks (_validate_request) and
//                              ValueErrors from generation (sampling params,
//                              context length)
//   "InternalServerError" 500  anything unexpected
//   "<status>"            any  HTTPException (type is str(status_code))
// Error bodies are built in api/error_json.h.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tern::api {

// One pydantic-style field error, e.g. type "missing", loc
// ('body', 'messages'), msg "Field required".
struct FieldError {
  std::string type;
  // Python tuple repr of the location: "('body', 'messages', 0, 'role')".
  std::string loc;
  std::string msg;
};

struct ApiError {
  int status = 400;
  std::string type = "BadRequestError";
  std::string message;
  std::optional<std::string> param;

  // 400 "BadRequestError": a check in SGLang's serving layer failed.
  static ApiError BadRequest(std::string message);
  // 400 "Bad Request": field types/shapes (pydantic). The message is the
  // Python repr of the error list, as SGLang's validation handler prints it:
  //   [{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]
  static ApiError Validation(const std::vector<FieldError>& errors);
  // 500 "InternalServerError", message "Internal server error: <what>".
  static ApiError Internal(std::string what);
  // An HTTPException: `status` with type str(status).
  static ApiError Http(int status, std::string message);
};

// A value or an ApiError.
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const ApiError& error() const { return std::get<ApiError>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace tern::api
