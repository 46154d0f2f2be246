// ParseGenerateRequest: SGLang's native GenerateReqInput (single or batch)
// with its sampling_params dict (SamplingParams keyword arguments).
#include <set>

#include <fmt/format.h>

#include "api/request_common.h"

namespace tern::api {
namespace {

// SamplingParams' constructor arguments; any other key is a TypeError in
// SGLang ("Unexpected keyword argument 'x'").
const std::set<std::string>& KnownSamplingKeys() {
  static const std::set<std::string> k = {
      "max_new_tokens", "min_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature",
      "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty",
      "n", "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
      "spaces_between_special_tokens", "no_stop_trim", "custom_params", "stream_interval",
      "logit_bias", "sampling_seed"};
  return k;
}

std::optional<ApiError> ReadSamplingParams(FieldReader& r, SamplingRequest* s) {
  s->max_new_tokens = 128;
  const Json* sp = r.Get("sampling_params");
  if (!sp) return std::nullopt;
  if (sp->is_array()) {
    if (sp->size() != 1)
      return ApiError::BadRequest("A list of per-prompt sampling_params is not supported yet; send one dict.");
    sp = &(*sp)[0];
  }
  if (!sp->is_object()) {
    r.Error("sampling_params", "dict_type", "Input should be a valid dictionary");
    return std::nullopt;
  }
  for (const auto& [key, v] : sp->items())
    if (!KnownSamplingKeys().count(key))
      return ApiError::BadRequest(fmt::format("Unexpected keyword argument '{}'", key));
  if (const auto it = sp->find("stop_regex"); it != sp->end() && !it->is_null())
    return ApiError::BadRequest("'stop_regex' is not supported by this server yet.");
  if (auto e = internal::ReadNativeConstraint(*sp, s)) return e;
  FieldReader p(*sp, r.At("sampling_params"), r.errors());
  if (sp->contains("max_new_tokens")) s->max_new_tokens = p.Int("max_new_tokens");  // null: no limit
  if (auto v = p.Int("min_new_tokens")) s->min_new_tokens = *v;
  // Values keep their JSON type: SamplingParams takes them as given.
  s->temperature = internal::ReadNumber(p, "temperature", /*as_float=*/false);
  s->top_p = internal::ReadNumber(p, "top_p", false);
  s->top_k = internal::ReadNumber(p, "top_k", false);
  s->min_p = internal::ReadNumber(p, "min_p", false);
  s->repetition_penalty = internal::ReadNumber(p, "repetition_penalty", false);
  if (auto v = internal::ReadNumber(p, "presence_penalty", false)) s->presence_penalty = *v;
  if (auto v = internal::ReadNumber(p, "frequency_penalty", false)) s->frequency_penalty = *v;
  internal::ReadStop(p, "stop", &s->stop);
  if (auto ids = internal::ReadTokenIds(p, "stop_token_ids")) s->stop_token_ids = std::move(*ids);
  if (auto v = p.Bool("ignore_eos")) s->ignore_eos = *v;
  if (auto v = p.Bool("skip_special_tokens")) s->skip_special_tokens = *v;
  if (auto v = p.Bool("no_stop_trim")) s->no_stop_trim = *v;
  s->seed = p.Int("sampling_seed");
  if (auto v = p.Int("n")) s->n = *v;
  if (const Json* bias = p.Dict("logit_bias")) {
    for (const auto& [k, v] : bias->items())
      if (auto f = FieldReader::ToFloat(v, p.At("logit_bias").Key(k), r.errors()))
        s->logit_bias.emplace_back(k, *f);
  }
  return std::nullopt;
}

bool IsTokenList(const Json& v) {
  if (!v.is_array()) return false;
  for (const auto& x : v)
    if (!x.is_number_integer() || x.get<int64_t>() < INT32_MIN || x.get<int64_t>() > INT32_MAX)
      return false;
  return true;
}

}  // namespace

ApiResult<GenerateRequest> ParseGenerateRequest(const Json& body) {
  if (!body.is_object())
    return ApiError::Validation({{"model_attributes_type", "('body',)",
                                  "Input should be a valid dictionary or object to extract fields from"}});
  std::vector<FieldError> errors;
  FieldReader r(body, Loc().Key("body"), &errors);
  GenerateRequest req;

  const Json* text = r.Get("text");
  const Json* ids = r.Get("input_ids");
  if (text) {
    if (text->is_string()) {
      req.prompts.push_back(PromptInput::Text(text->get<std::string>()));
    } else if (text->is_array() && std::all_of(text->begin(), text->end(),
                                               [](const Json& e) { return e.is_string(); })) {
      req.batch = true;
      for (const auto& e : *text) req.prompts.push_back(PromptInput::Text(e.get<std::string>()));
    } else {
      r.ErrorAt(r.At("text").Key("list[str]"), "list_type", "Input should be a valid list");
      r.ErrorAt(r.At("text").Key("str"), "string_type", "Input should be a valid string");
    }
  } else if (ids) {
    if (IsTokenList(*ids)) {
      req.prompts.push_back(PromptInput::Tokens(ids->get<std::vector<int32_t>>()));
    } else if (ids->is_array() && std::all_of(ids->begin(), ids->end(), IsTokenList)) {
      req.batch = true;
      for (const auto& e : *ids) req.prompts.push_back(PromptInput::Tokens(e.get<std::vector<int32_t>>()));
    } else {
      r.ErrorAt(r.At("input_ids").Key("list[list[int]]"), "list_type", "Input should be a valid list");
      r.ErrorAt(r.At("input_ids").Key("list[int]"), "list_type", "Input should be a valid list");
    }
  }
  std::optional<ApiError> sampling_error = ReadSamplingParams(r, &req.sampling);
  if (auto v = r.Bool("stream")) req.stream = *v;
  if (auto v = r.Bool("return_logprob")) req.return_logprob = *v;
  if (auto v = r.Int("logprob_start_len")) req.logprob_start_len = *v;
  if (auto v = r.Int("top_logprobs_num")) req.top_logprobs_num = *v;
  if (auto v = r.Bool("return_text_in_logprobs")) req.return_text_in_logprobs = *v;
  req.rid = internal::ReadRid(r);
  if (!errors.empty()) return ApiError::Validation(errors);

  // GenerateReqInput.normalize_batch_and_arguments.
  if (!text && !ids) return ApiError::BadRequest("Either text, input_ids or input_embeds should be provided.");
  if (!text && ids->empty()) return ApiError::BadRequest("input_ids cannot be empty.");
  if (sampling_error) return *sampling_error;
  if (auto e = internal::CheckN(req.sampling)) return *e;
  if (req.top_logprobs_num < 0)
    return ApiError::BadRequest(fmt::format("top_logprobs_num must be non-negative, got {}.", req.top_logprobs_num));
  if (req.top_logprobs_num > kMaxTopLogprobsNum)
    return ApiError::BadRequest(
        fmt::format("top_logprobs_num must be at most {}, got {}.", kMaxTopLogprobsNum, req.top_logprobs_num));
  if (req.logprob_start_len < -1)
    return ApiError::BadRequest(
        fmt::format("logprob_start_len must be -1 or at least 0, got {}.", req.logprob_start_len));
  return req;
}

}  // namespace tern::api
