// The small native bodies: /v1/tokenize, /v1/detokenize, /abort_request.
#include <fmt/format.h>

#include "api/request_common.h"

namespace tern::api {
namespace {

std::optional<ApiError> NotAnObject(const Json& body) {
  if (body.is_object()) return std::nullopt;
  return ApiError::Validation({{"model_attributes_type", "('body',)",
                                "Input should be a valid dictionary or object to extract fields from"}});
}

}  // namespace

ApiResult<TokenizeRequest> ParseTokenizeRequest(const Json& body) {
  if (auto e = NotAnObject(body)) return *e;
  std::vector<FieldError> errors;
  FieldReader r(body, Loc().Key("body"), &errors);
  TokenizeRequest req;
  const char* key = r.Has("prompt") ? "prompt" : "text";
  std::optional<std::string> prompt = r.String(key);
  if (auto v = r.Bool("add_special_tokens")) req.add_special_tokens = *v;
  if (!prompt && errors.empty()) r.Error("prompt", "missing", "Field required");
  if (!errors.empty()) return ApiError::Validation(errors);
  req.prompt = std::move(*prompt);
  return req;
}

ApiResult<DetokenizeRequest> ParseDetokenizeRequest(const Json& body, int64_t vocab_size) {
  if (auto e = NotAnObject(body)) return *e;
  std::vector<FieldError> errors;
  FieldReader r(body, Loc().Key("body"), &errors);
  DetokenizeRequest req;
  if (!r.Has("tokens")) r.Error("tokens", "missing", "Field required");
  std::optional<std::vector<int32_t>> ids = internal::ReadTokenIds(r, "tokens");
  if (auto v = r.Bool("skip_special_tokens")) req.skip_special_tokens = *v;
  if (!errors.empty()) return ApiError::Validation(errors);
  req.tokens = std::move(*ids);
  for (size_t i = 0; i < req.tokens.size(); ++i)
    if (req.tokens[i] < 0 || req.tokens[i] >= vocab_size)
      return ApiError::BadRequest(fmt::format("Token id {} at index {} is outside the vocabulary [0, {}).",
                                              req.tokens[i], i, vocab_size));
  return req;
}

ApiResult<AbortRequest> ParseAbortRequest(const Json& body) {
  if (auto e = NotAnObject(body)) return *e;
  std::vector<FieldError> errors;
  FieldReader r(body, Loc().Key("body"), &errors);
  AbortRequest req;
  if (auto rid = internal::ReadRid(r)) req.rid = std::move(*rid);
  if (auto v = r.Bool("abort_all")) req.abort_all = *v;
  if (!errors.empty()) return ApiError::Validation(errors);
  return req;
}

}  // namespace tern::api
