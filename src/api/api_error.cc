#include "api/api_error.h"

namespace tern::api {

namespace {
ApiError Make(int status, std::string type, std::string message) {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  return e;
}
}  // namespace

ApiError ApiError::BadRequest(std::string message) {
  return Make(400, "BadRequestError", std::move(message));
}

ApiError ApiError::Validation(const std::vector<FieldError>& errors) {
  // str(exc.errors()) of a pydantic ValidationError, without the 'input'
  // entries (they repeat the request back).
  std::string message = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i) message += ", ";
    message += "{'type': '" + errors[i].type + "', 'loc': " + errors[i].loc + ", 'msg': ";
    // msg is a Python str: repr it the simple way (our messages hold no quotes
    // of both kinds).
    const bool has_single = errors[i].msg.find('\'') != std::string::npos;
    const char q = has_single ? '"' : '\'';
    message += q + errors[i].msg + q + "}";
  }
  message += "]";
  return Make(400, "Bad Request", std::move(message));
}

ApiError ApiError::Internal(std::string what) {
  return Make(500, "InternalServerError", "Internal server error: " + std::move(what));
}

ApiError ApiError::Http(int status, std::string message) {
  return Make(status, std::to_string(status), std::move(message));
}

}  // namespace tern::api
