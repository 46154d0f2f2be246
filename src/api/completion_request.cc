// ParseCompletionRequest (SGLang's CompletionRequest +
// OpenAIServingCompletion._validate_request) and ParseJsonBody.
#include <fmt/format.h>

#include "api/json_parse.h"
#include "api/py_text.h"
#include "api/request_common.h"

namespace tern::api {
namespace {

void PromptUnionErrors(FieldReader& r) {
  const Loc loc = r.At("prompt");
  r.ErrorAt(loc.Key("list[int]"), "list_type", "Input should be a valid list");
  r.ErrorAt(loc.Key("list[list[int]]"), "list_type", "Input should be a valid list");
  r.ErrorAt(loc.Key("str"), "string_type", "Input should be a valid string");
  r.ErrorAt(loc.Key("list[str]"), "list_type", "Input should be a valid list");
}

bool IsTokenList(const Json& v) {
  if (!v.is_array()) return false;
  for (const auto& x : v)
    if (!x.is_number_integer() || x.get<int64_t>() < INT32_MIN || x.get<int64_t>() > INT32_MAX)
      return false;
  return true;
}

// prompt: str | list[str] | list[int] | list[list[int]].
void ReadPrompt(FieldReader& r, CompletionRequest* req) {
  const Json* p = r.Get("prompt");
  if (!p) {
    r.Error("prompt", "missing", "Field required");
    return;
  }
  if (p->is_string()) {
    req->prompts.push_back(PromptInput::Text(p->get<std::string>()));
    return;
  }
  if (!p->is_array()) return PromptUnionErrors(r);
  if (IsTokenList(*p)) {  // includes the empty list
    req->prompts.push_back(PromptInput::Tokens(p->get<std::vector<int32_t>>()));
    return;
  }
  bool all_strings = true, all_token_lists = true;
  for (const auto& e : *p) {
    all_strings = all_strings && e.is_string();
    all_token_lists = all_token_lists && IsTokenList(e);
  }
  if (all_strings) {
    req->batch = true;
    for (const auto& e : *p) req->prompts.push_back(PromptInput::Text(e.get<std::string>()));
  } else if (all_token_lists) {
    req->batch = true;
    for (const auto& e : *p) req->prompts.push_back(PromptInput::Tokens(e.get<std::vector<int32_t>>()));
  } else {
    PromptUnionErrors(r);
  }
}

}  // namespace

ApiResult<Json> ParseJsonBody(std::string_view body) {
  if (JsonNestingDepth(body) > 1000)
    return ApiError::Validation({{"json_invalid", "('body', 0)", "JSON decode error"}});
  Json out;
  size_t byte = 0;
  if (!ParseJsonLinear(body, &out, &byte))
    return ApiError::Validation({{"json_invalid", fmt::format("('body', {})", byte > 0 ? byte - 1 : 0), "JSON decode error"}});
  return out;
}

ApiResult<CompletionRequest> ParseCompletionRequest(const Json& body) {
  if (!body.is_object())
    return ApiError::Validation({{"model_attributes_type", "('body',)",
                                  "Input should be a valid dictionary or object to extract fields from"}});
  std::vector<FieldError> errors;
  FieldReader r(body, Loc().Key("body"), &errors);
  CompletionRequest req;
  ReadPrompt(r, &req);
  if (auto m = internal::ReadModel(r)) req.model = *m;
  internal::ReadOpenAiSampling(r, &req.sampling);
  // max_tokens: default 16; null (vLLM) runs to the context limit.
  if (!body.contains("max_tokens")) {
    req.sampling.max_new_tokens = 16;
  } else if (auto v = r.Int("max_tokens")) {
    if (*v <= 0) r.Error("max_tokens", "value_error", "Value error, max_tokens must be positive");
    req.sampling.max_new_tokens = *v;
  }
  req.logprobs = r.Int("logprobs");
  if (auto v = r.Bool("echo")) req.echo = *v;
  req.prompt_logprobs = r.Int("prompt_logprobs");
  if (auto v = r.Bool("return_tokens_as_token_ids")) req.return_tokens_as_token_ids = *v;
  if (auto v = r.Bool("stream")) req.stream = *v;
  internal::ReadStreamOptions(r, &req.include_usage, &req.continuous_usage_stats);
  req.rid = internal::ReadRid(r);
  req.user = r.String("user");
  internal::ValidateResponseFormat(r);
  if (!errors.empty()) return ApiError::Validation(errors);

  // OpenAIServingCompletion._validate_request.
  bool empty = req.prompts.empty();
  if (!empty) {
    empty = true;
    for (const auto& p : req.prompts) empty = empty && (p.text ? p.text->empty() : p.token_ids.empty());
  }
  if (empty) return ApiError::BadRequest("Prompt cannot be empty");
  if (auto e = internal::CheckN(req.sampling)) return *e;
  if (req.logprobs)
    if (auto e = internal::CheckTopLogprobs("logprobs", *req.logprobs, kMaxTopLogprobs)) return *e;
  if (req.prompt_logprobs) {
    if (*req.prompt_logprobs == -1)  // vLLM: the whole vocabulary
      return ApiError::BadRequest(fmt::format(
          "`prompt_logprobs` -1 (the whole vocabulary) is not supported; at most {}.", kMaxTopLogprobs));
    if (auto e = internal::CheckTopLogprobs("prompt_logprobs", *req.prompt_logprobs, kMaxTopLogprobs)) return *e;
  }
  if (auto e = internal::ReadConstraint(body, &req.sampling)) return *e;
  return req;
}

}  // namespace tern::api
